import { sql, type SQL } from "drizzle-orm";
import { causeChain, LeaseLost } from "../core/errors.js";
import { archiveCtes } from "./archive.js";

export const LEASE_LOST_CODE = "AKL01";
export const LEASE_LOST_PREFIX = "akadze: this run no longer owns job ";

/**
 * LeaseLost saying `message` when `error` is, or wraps, the raise of a statement whose run no longer owns its job
 * (LEASE_LOST_CODE); else `error` as it is. A completion and a workflow step read their failures through it.
 * @example throw leaseLostOr(error, `this run no longer owns job ${id}; its writes were rolled back`);
 */
export function leaseLostOr(error: unknown, message: string): unknown {
  return causeChain(error).some((e) => e.code === LEASE_LOST_CODE) ? new LeaseLost(message, { cause: error }) : error;
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
