import { sql, type SQL } from "drizzle-orm";
import { causeChain } from "../../core/error-causes.js";
import { LeaseLost } from "../../core/errors.js";
import { archiveCtes } from "../history/archive.js";

export const LEASE_LOST_CODE = "AKL01";
export const LEASE_LOST_PREFIX = "akadze: this run no longer owns job ";

/**
 * What a run throws when a statement that writes only while it owns job `jobId` (this one, a step's save, a
 * child jobs' start) raised LEASE_LOST_CODE anywhere in the cause chain: LeaseLost, saying `writes` rolled back
 * with it; any other error as it is.
 * @example throw leaseLostOr(error, jobId, "the step's writes");
 */
export function leaseLostOr(error: unknown, jobId: number, writes = "its writes"): unknown {
  return causeChain(error).some((e) => e.code === LEASE_LOST_CODE)
    ? new LeaseLost(`this run no longer owns job ${jobId}; ${writes} were rolled back`, { cause: error }) : error;
}

/**
 * Marks one job `succeeded` with `result` if `owner` still holds its run of `attempt`, and raises otherwise, so that inside a
 * transaction or a neon-http batch the caller's writes roll back with it. The job moves to the history
 * (`keepSucceeded: false`: it is only deleted).
 */
export function completeOwnedStatement(owner: string, attempt: number, at: SQL, jobId: number, result: unknown = null, keepSucceeded = true): SQL {
  return sql`
    with completed as (
      delete from akadze.jobs where id = ${jobId} and state = 'running' and lease_owner = ${owner} and attempt = ${attempt}
      returning id, task, queue, args, 'succeeded'::text as state, priority, attempt, max_attempts, run_at, expires_at, unique_key,
        limit_key, limit_wait_ms, cancel_requested, errors, ${JSON.stringify(result ?? null)}::jsonb as result, created_at, started_at,
        ${at} as finished_at, fair_key, trace_context
    ),
    ${sql.join(archiveCtes("completed", sql`select * from completed`, "history", keepSucceeded), sql`, `)},
    freed as (update akadze.limit_slots s set job_id = null from completed d where s.job_id = d.id returning s.key)
    select case when exists (select 1 from completed)
      then (select jsonb_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt) from completed)
      else to_jsonb(akadze.raise_error(${LEASE_LOST_PREFIX + jobId}, ${LEASE_LOST_CODE})) end as r`;
}
