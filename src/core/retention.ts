// What invocations prune beside their claims, and for how long rows stay: the options, their defaults and the
// plan they resolve to, with the history's partition width (no I/O; the statements are in sql/history/retention.ts,
// sql/history/maintain-history.ts and sql/history/prune-jobs.ts).
import { parseDuration, type Duration } from "./duration.js";
import type { FinishedState } from "./states.js";
import { parseOrThrow, RetentionSchema } from "./validate.js";

/** How long succeeded, cancelled and rate_limited jobs stay in the history after they finish, by default. */
export const DEFAULT_RETENTION = "7d";
/**
 * At most this many rows of each kind one invocation deletes one by one (failed jobs, registry rows, history
 * rows no partition holds), so pruning never makes a claim slow. The history's partitions are dropped whole.
 */
export const RETENTION_BATCH = 1000;
/** How long an invocation or worker stays in `akadze.workers` after it was last seen. */
export const WORKERS_RETENTION = "1d";

/** What invocations prune as a side effect of their claim. */
export interface RetentionOptions {
  /**
   * Age after which succeeded, cancelled and rate_limited jobs are deleted from the history (its partitions
   * are dropped whole, so a row may stay up to a partition's width longer). Default `DEFAULT_RETENTION` ("7d").
   */
  finished?: Duration;
  /** Age after which failed jobs are deleted too; default: kept until requeued or pruned explicitly. */
  failed?: Duration | null;
  /** Rows deleted one by one per invocation at most, per kind. Default `RETENTION_BATCH` (1000). */
  batch?: number;
  /**
   * `false`: keep no row of a succeeded job (graphile-worker's semantics): its completion deletes it, so
   * getJob and listings no longer see it and its result is not stored. Cancelled, rate_limited and failed
   * jobs are kept as always. Default true.
   */
  keepSucceeded?: boolean;
}

/** `runOnce`'s `retention` option: an age for succeeded, cancelled and rate_limited jobs, the full options, or `false` for none. */
export type Retention = Duration | RetentionOptions | false;

/** Retention with every default applied, in milliseconds. */
export interface RetentionPlan { finishedMs: number; failedMs: number | null; batch: number; workersMs: number; keepSucceeded: boolean }

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
    keepSucceeded: o.keepSucceeded ?? true,
  };
}

/** The widths a history partition may have: a retention picks the widest at most a quarter of it. */
const PARTITION_WIDTHS_MS = [1_000, 5_000, 15_000, 60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000];

/** How the history is partitioned and maintained under a retention (see `historyPartitioning`). */
export interface HistoryPartitioning {
  /** One partition covers this much finish time. */
  widthMs: number;
  /** Partitions are made this far ahead of the clock. */
  aheadMs: number;
  /** One process runs the maintenance at most this often. */
  everyMs: number;
}

/**
 * The history's partitions for a retention of `finishedMs`: a quarter of it wide at most (from 1 s to a day),
 * so a row outlives the retention by at most a partition's width plus the maintenance interval; maintained
 * every partition width (1 s to 1 min), partitions made two widths (and three intervals) ahead. Seven days:
 * day partitions, some ten of them; five seconds: one-second partitions, about ten.
 * @example historyPartitioning(7 * 86_400_000).widthMs // 86_400_000
 */
export function historyPartitioning(finishedMs: number): HistoryPartitioning {
  const widthMs = PARTITION_WIDTHS_MS.filter((w) => w <= finishedMs / 4).at(-1) ?? PARTITION_WIDTHS_MS[0];
  const everyMs = Math.min(60_000, Math.max(1_000, widthMs));
  return { widthMs, everyMs, aheadMs: Math.max(2 * widthMs, 3 * everyMs) };
}

/** Pruned by age by default: the states of the history, which nothing moves a job out of (failed jobs wait for requeue). */
export const PRUNED_BY_DEFAULT = ["succeeded", "cancelled", "rate_limited"] as const satisfies readonly FinishedState[];
