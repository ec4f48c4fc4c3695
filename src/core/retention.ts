// What invocations prune as a side effect of their claim, and for how long rows stay: the options, their
// defaults and the plan they resolve to (no I/O; the statements are in sql/retention.ts and sql/prune-jobs.ts).
import { parseDuration, type Duration } from "./duration.js";
import type { FinishedState } from "./states.js";
import { parseOrThrow, RetentionSchema } from "./validate.js";

/** How long succeeded, cancelled and rate_limited jobs stay in the table after they finish, by default. */
export const DEFAULT_RETENTION = "7d";
/** At most this many job rows (and as many registry rows) one invocation deletes, so pruning never makes a claim slow. */
export const RETENTION_BATCH = 1000;
/** How long an invocation or worker stays in `akadze.workers` after it was last seen. */
export const WORKERS_RETENTION = "1d";

/** What invocations prune as a side effect of their claim. */
export interface RetentionOptions {
  /** Age after which succeeded, cancelled and rate_limited jobs are deleted. Default `DEFAULT_RETENTION` ("7d"). */
  finished?: Duration;
  /** Age after which failed jobs are deleted too; default: kept until requeued or pruned explicitly. */
  failed?: Duration | null;
  /** Rows deleted per invocation at most, per kind. Default `RETENTION_BATCH` (1000). */
  batch?: number;
}

/** `runOnce`'s `retention` option: an age for succeeded, cancelled and rate_limited jobs, the full options, or `false` for none. */
export type Retention = Duration | RetentionOptions | false;

/** Retention with every default applied, in milliseconds. */
export interface RetentionPlan { finishedMs: number; failedMs: number | null; batch: number; workersMs: number }

/** Validates a `retention` option (throws InvalidInput) and applies the defaults; `null` means prune nothing. */
export function resolveRetention(retention: Retention | undefined): RetentionPlan | null {
  if (retention === undefined) return resolveRetention({});
  const o = parseOrThrow(RetentionSchema, retention, "retention");
  if (o === false) return null;
  return {
    finishedMs: o.finished ?? parseDuration(DEFAULT_RETENTION),
    failedMs: o.failed ?? null,
    batch: o.batch ?? RETENTION_BATCH,
    workersMs: parseDuration(WORKERS_RETENTION),
  };
}

/** Pruned by age by default: the terminal states nothing moves a job out of (failed jobs wait for requeue). */
export const PRUNED_BY_DEFAULT = ["succeeded", "cancelled", "rate_limited"] as const satisfies readonly FinishedState[];
