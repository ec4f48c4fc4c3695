import * as v from "valibot";
import { sql, type SQL } from "drizzle-orm";
import { DurationSchema, parseDuration, type Duration } from "../core/duration.js";
import { MAX_SPAN_MS, parseOrThrow, RetentionSchema } from "../core/validate.js";
import { queryJson, type Db } from "../db/driver.js";

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

function before(now: Date, ms: number): SQL {
  return sql`${new Date(now.getTime() - ms).toISOString()}::timestamptz`;
}

const FINISHED = new Set(["succeeded", "cancelled", "rate_limited", "failed"]);
/** Pruned by age by default: the terminal states nothing moves a job out of (failed jobs wait for requeue). */
export const PRUNED_BY_DEFAULT = ["succeeded", "cancelled", "rate_limited"] as const;

/** A finished state as an SQL literal, so the planner sees constants and uses the (state, finished_at) index. */
function stateLiteral(state: string): string {
  if (!FINISHED.has(state)) throw new TypeError(`not a finished state: ${state}`);
  return `'${state}'`;
}

/**
 * Deletes up to `limit` jobs in `states` that finished before `cutoff`. The (state, finished_at) index
 * makes this a short range scan; SKIP LOCKED lets concurrent invocations share the work instead of waiting.
 */
function deleteFinished(name: string, states: string[], cutoff: SQL, limit: number): SQL {
  return sql`${sql.identifier(name)} as (
    delete from akadze.jobs where id in (
      select id from akadze.jobs
      where state in (${sql.raw(states.map(stateLiteral).join(", "))}) and finished_at < ${cutoff}
      limit ${limit} for update skip locked)
    returning id)`;
}

/**
 * The retention work of one invocation as CTEs for the claim's round trip (`ClaimParams.extra`): old
 * finished jobs and long-gone registry rows, each in a bounded batch. They never touch queued or running
 * jobs, which is what the claim moves.
 */
export function retentionCtes(plan: RetentionPlan, now: Date): SQL[] {
  const ctes = [deleteFinished("akadze_pruned_jobs", [...PRUNED_BY_DEFAULT], before(now, plan.finishedMs), plan.batch)];
  if (plan.failedMs !== null) ctes.push(deleteFinished("akadze_pruned_failed", ["failed"], before(now, plan.failedMs), plan.batch));
  ctes.push(sql`akadze_pruned_workers as (
    delete from akadze.workers where id in (
      select id from akadze.workers where last_seen_at < ${before(now, plan.workersMs)}
      limit ${plan.batch} for update skip locked)
    returning id)`);
  return ctes;
}

/** Which finished jobs `pruneJobs` deletes. */
export interface PruneOptions {
  /** Finished longer ago than this. Default `DEFAULT_RETENTION`. */
  olderThan?: Duration;
  /** Job states to delete. Default succeeded, cancelled and rate_limited; add "failed" to drop failed jobs too. */
  states?: ("succeeded" | "cancelled" | "rate_limited" | "failed")[];
  now?: Date;
}

const PruneSchema = v.strictObject({
  olderThan: v.optional(v.pipe(DurationSchema, v.maxValue(MAX_SPAN_MS, `olderThan must be at most ${MAX_SPAN_MS} ms (100 years)`))),
  states: v.optional(v.pipe(v.array(v.picklist(["succeeded", "cancelled", "rate_limited", "failed"], "states are succeeded, cancelled, rate_limited or failed")),
    v.minLength(1, "give at least one state"))),
  now: v.optional(v.date("now must be a valid Date")),
});

/**
 * Deletes finished jobs older than an age now, batch after batch, and returns how many; invocations do the
 * same a batch at a time, so this is for failed jobs or a one-off cleanup.
 * @example await pruneJobs(db, { olderThan: "30d", states: ["failed"] });
 */
export async function pruneJobs(db: Db, options: PruneOptions = {}): Promise<{ deleted: number }> {
  const o = parseOrThrow(PruneSchema, options, "prune options");
  const cutoff = before(o.now ?? new Date(), o.olderThan ?? parseDuration(DEFAULT_RETENTION));
  let deleted = 0;
  for (;;) {
    const n = await queryJson<number>(db, sql`with ${deleteFinished("pruned", o.states ?? [...PRUNED_BY_DEFAULT], cutoff, RETENTION_BATCH)}
      select to_jsonb((select count(*) from pruned)) as r`);
    deleted += Number(n);
    if (Number(n) < RETENTION_BATCH) return { deleted };
  }
}
