// What a claim statement answers, and the jobs it hands the engine (claim.ts builds the statement).
import type { MovedJob } from "../control/changed-job.js";
import type { ScheduleSlotReport } from "../schedules/enqueue-due-slots.js";
import type { StoredDefinition } from "../schedules/due-runtime-schedules.js";
import type { TraceCarrier } from "../../core/tracing.js";

/** A job handed to this invocation. */
export interface ClaimedJob {
  id: number;
  task: string;
  queue: string;
  args: unknown;
  attempt: number;
  max_attempts: number;
  priority: number;
  /** Marked started by the claim: it may run at once. */
  started: boolean;
  /** A limit applies: its slot and token are taken when it starts. */
  limited: boolean;
  /** Where it was enqueued, when the claim was `traced` (null: untraced); otherwise absent. */
  trace?: TraceCarrier | null;
}

/**
 * A claimed job as the statement sends it: `[id, task, queue, args, attempt, max_attempts, priority, started, limited]`, and the
 * trace context last when the claim was `traced`.
 */
export type ClaimedRow = [number | string, string, string, unknown, number, number, number, boolean, boolean, (TraceCarrier | null)?];

/** The claim statement's answer: `claimed` as rows (see `claimResultOf`). */
export type ClaimAnswer = Omit<ClaimResult, "claimed" | "recovered"> & { claimed: ClaimedRow[]; recovered?: MovedJob[] };

/** The claim's answer with its rows as jobs (`traced`: the claim was, and each job has its trace context). */
export function claimResultOf(answer: ClaimAnswer, traced = false): ClaimResult {
  const claimed = traced
    ? answer.claimed.map(([id, task, queue, args, attempt, max_attempts, priority, started, limited, trace]): ClaimedJob =>
      ({ id: Number(id), task, queue, args, attempt, max_attempts, priority, started, limited, trace: trace ?? null }))
    : answer.claimed.map(([id, task, queue, args, attempt, max_attempts, priority, started, limited]): ClaimedJob =>
      ({ id: Number(id), task, queue, args, attempt, max_attempts, priority, started, limited }));
  return { ...answer, claimed, recovered: answer.recovered ?? [] };
}

export interface ClaimResult {
  claimed: ClaimedJob[];
  /** Jobs whose lease expired, back to `queued` or `failed` (the recovery rider's report; empty without it). */
  recovered: MovedJob[];
  /** A job's lease expired (the recovery rider's probe, when it rode instead): the next claim carries the recovery. */
  recoverable?: boolean;
  cancelled: MovedJob[];
  /** Jobs held back by their limit past their `limitWait`, ended `rate_limited` by this claim. */
  rateLimited: MovedJob[];
  /** Jobs whose args alone exceed `maxBytes`: `failed`. */
  tooLarge: MovedJob[];
  /** Claimable jobs were left for the next claim because the batch reached `maxBytes`. */
  more: boolean;
  /** Whether any limit exists: the next claim includes the limit CTEs only then. */
  limits: boolean;
  /** Whether any queued job must be cancelled at a moment (a cancel request, an expiry): the next claim includes the stop CTEs only then. */
  stops: boolean;
  /** Whether any queued job has a fairness key: the next claim includes the fair CTEs only then. */
  fair: boolean;
  /** A fair claim met a tenant with sub-keys: the next fair claims walk them (absent from a plain claim). */
  fairSubKeys?: boolean;
  /** A fair claim by turns saw a parked keyed job due: the next gives parked jobs their turns (absent otherwise). */
  parkedDue?: boolean;
  /** The turns a fair claim by turns read spanned priorities: the next reads on past them (absent otherwise). */
  fairPriorities?: boolean;
  /**
   * A fair claim by turns saw a due job without a turn (one without a key, a parked keyed one): the next sends the
   * plain scan (absent otherwise).
   */
  plainDue?: boolean;
  /** Jobs the schedules' rider enqueued in the same statement. */
  scheduled?: number;
  /** What the schedules' CTEs found due, on the statement's clock (`scheduleSlotReport`), when they rode along. */
  schedules?: ScheduleSlotReport;
  /** Whether any runtime schedule is active (`runtimeAnyReport`): the schedules rider probes for due ones only then. */
  runtimeAny?: boolean;
  /** Runtime schedules with a slot due that the claim did not offer (`runtimeDueReport`), when asked; null: none. */
  runtimeDue?: StoredDefinition[] | null;
  /** The jobs table's planner statistics are stale (`statisticsStale`), when the claim was asked. */
  stale?: boolean;
  /** The queue table has a vacuum's worth of dead rows (`vacuumDue`), when the claim was asked. */
  vacuum?: boolean;
  /** The history has retention work (`historyDue`), when the claim was asked. */
  historyDue?: boolean;
  /** Due claimable jobs, the claimed ones included, counted up to the backlog rider's bound (only when it rode). */
  backlog?: number;
}
