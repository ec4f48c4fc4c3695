import type { SQL } from "drizzle-orm";
import type { App } from "../app/app.js";
import type { Db } from "../db/query.js";
import type { Claim } from "./claimer.js";
import type { ClaimRider } from "./rider.js";
import type { ClaimPolicy } from "./claim-policy.js";
import type { BudgetClock } from "./budget-clock.js";
import type { EngineTrace } from "../core/tracing.js";

/**
 * The lease owner of one engine: the invocation's (or worker's) id and a token of this engine alone. An id is
 * not an owner: a request delivered twice starts two invocations under one id, and neither may settle,
 * release or renew the other's jobs. Readers match an id's jobs by the prefix `id#`.
 */
export function leaseOwnerFor(id: string): string {
  return `${id}#${crypto.randomUUID().slice(0, 13)}`;
}

/** What the engine is composed with: one invocation (`runOnce`) or one lane of a long-lived worker. */
export interface EngineOptions {
  app: App;
  db: Db;
  /** The invocation's (or worker's) id, which its summary carries; the engine's lease owner is made from it (`leaseOwnerFor`). */
  id: string;
  queues: string[] | null;
  slots: number;
  leaseMs: number;
  heartbeatMs: number;
  /** The local clock: budget, schedules, error times. */
  now: () => Date;
  /** The statement clock: the caller's, or the database's `now()`. */
  sqlNow: () => SQL;
  /**
   * How long new jobs may start (the invocation's budget, or Infinity for a worker lane), on one clock: the
   * monotonic one for the real clock, else the caller's. An invocation's fan-out reads the same one.
   */
  budget: BudgetClock;
  signal?: AbortSignal;
  /** How it claims, and the most jobs one claim asks for: an invocation's or a worker lane's (claim-policy.ts). */
  policy: ClaimPolicy;
  /** What rides on each claim (riders.ts: recovery, schedules, retention, history, registry, backlog, upkeep). */
  riders: ClaimRider[];
  /** False: a succeeded job keeps no row (`retention.keepSucceeded`). Default true. */
  keepSucceeded?: boolean;
  /**
   * CTEs for every settle statement that records outcomes (the workers registry), given jobs completed on their
   * own meanwhile and whether the engine holds jobs besides the ones the statement settles.
   */
  settleAfter: (unreported: number, othersHeld: boolean) => SQL[];
  /**
   * A statement for the jobs completed on their own (completeTx, completeBatch) that no settle counted, sent
   * at the end only if there are any (no settle followed them); null: nothing to send.
   */
  reportUncounted?: (uncounted: number) => SQL | null;
  /** A claim that failed after the first (the first one's error is thrown). */
  onError?: (error: unknown) => void;
  /** Told of every claim's answer and the size it asked for (fan-out watches them). */
  onClaim?: (claim: Claim, asked: number) => void;
  /** The spans of this engine's claims, settles and runs, when the app traces; null or absent: none. */
  trace?: EngineTrace | null;
}
