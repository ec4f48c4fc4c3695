import { sql, type SQL } from "drizzle-orm";

export const LEASE_LOST_CODE = "AKL01";
export const LEASE_LOST_PREFIX = "akadze: this run no longer owns job ";

/**
 * Marks one job `succeeded` with `result` if `owner` still holds it, and raises otherwise, so that inside a
 * transaction or a neon-http batch the caller's writes roll back with it.
 */
export function completeOwnedStatement(owner: string, at: SQL, jobId: number, result: unknown = null): SQL {
  return sql`
    with done as (
      update akadze.jobs set state = 'succeeded', finished_at = ${at}, lease_owner = null, lease_expires_at = null,
        result = ${JSON.stringify(result ?? null)}::jsonb
      where id = ${jobId} and state = 'running' and lease_owner = ${owner}
      returning id, task, queue, attempt
    ),
    freed as (update akadze.limit_slots s set job_id = null from done d where s.job_id = d.id returning s.key)
    select case when exists (select 1 from done)
      then (select jsonb_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt) from done)
      else to_jsonb(akadze.raise_error(${LEASE_LOST_PREFIX + jobId}, ${LEASE_LOST_CODE})) end as r`;
}
