import type { SQL } from "drizzle-orm";
import type { App } from "../app/app.js";
import type { Db } from "../db/query.js";
import type { EngineTrace } from "../core/tracing.js";
import type { BudgetClock } from "./budget-clock.js";
import type { HeldJobs } from "./held-jobs.js";
import type { Pace } from "./pace.js";
import type { ClaimRider } from "./rider.js";
import type { Wakeup } from "./signal.js";
import type { Summary, Unreported } from "./summary.js";
import { requestTimeoutMs } from "./timed-query.js";

/** What only the engine decides, asked by a collaborator. */
export interface EngineDecisions {
  /** Whether jobs of `task` may still start here soon, so that a filling batch of it waits for them (batches.ts). */
  batchMayGrow(task: string): boolean;
}

/**
 * What an engine's collaborators share, built once per engine (engine.ts): its options as resolved, the state
 * they all read or count into (the held jobs, the summary, the pace, the budget) and the wake-up that tells the
 * engine's loop something changed. Each collaborator takes the fields it reads (`Pick<EngineContext, ...>`),
 * so its type is the list of its dependencies; nothing is wired through a callback of its own.
 */
export interface EngineContext {
  readonly app: App;
  readonly db: Db;
  /** The engine's lease owner (`leaseOwnerFor(id)`): unique to it. */
  readonly owner: string;
  readonly queues: string[] | null;
  readonly leaseMs: number;
  readonly heartbeatMs: number;
  /** The local clock: budget, schedules, error times. */
  readonly now: () => Date;
  /** The statement clock: the caller's, or the database's `now()`. */
  readonly sqlNow: () => SQL;
  /** How long new jobs may start, on one clock (budget-clock.ts). */
  readonly budget: BudgetClock;
  /** What rides on each claim (riders.ts). */
  readonly riders: ClaimRider[];
  /**
   * A claim that asks for more is followed by another at once (the policy drains): a claim may then go without
   * CTEs it is not known to need, and the one that learns it needed them asks for the next (claimer.ts).
   */
  readonly drains: boolean;
  /** False: a succeeded job keeps no row. */
  readonly keepSucceeded: boolean;
  /** CTEs for every settle statement that records outcomes (the workers registry), given jobs completed on their own meanwhile. */
  readonly settleAfter: (unreported: number, othersHeld: boolean) => SQL[];
  readonly onError: ((error: unknown) => void) | undefined;
  /** The spans of the engine's claims, settles and runs; null: untraced. */
  readonly trace: EngineTrace | null;
  /** Every job the engine holds or settles: a job's local life (held-jobs.ts). */
  readonly jobs: HeldJobs;
  /** What the engine did, counted as it happens (summary.ts). */
  readonly summary: Summary;
  /** Jobs done that no registry update counted yet. */
  readonly unreported: Unreported;
  /** Moving averages of runs and round trips: how many jobs to start ahead of free slots (pace.ts). */
  readonly pace: Pace;
  /** Notified whenever something the engine's loop looks at changed. */
  readonly change: Wakeup;
  readonly engine: EngineDecisions;
}

/** How long to wait for a statement's answer now: within what is left of the budget (Infinity: as long as it takes). */
export function answerTimeoutMs(ctx: Pick<EngineContext, "db" | "budget">): number {
  return requestTimeoutMs(ctx.db, ctx.budget.remainingMs());
}
