import { sql, type SQL } from "drizzle-orm";

/**
 * Puts back the jobs leased to `owner` that the invocation does not know it holds (not among `known`): a
 * claim whose answer was lost after it committed leased (and may have marked started) jobs no body ever
 * ran, and so did one that took back a job whose outcome was on its way (held-jobs.ts), and a start request
 * that failed left its jobs leased (settler.ts). They go back to `queued` with the attempt refunded and
 * `started_at` cleared, so recovery does not charge them. Locks in id order, as the heartbeat and the settle
 * do. Answers how many it put back.
 */
export function releaseUnheldStatement(owner: string, known: number[]): SQL {
  return sql`
    with unheld as (
      select j.id from akadze.jobs j
      where j.lease_owner = ${owner} and j.state = 'running'
        and j.id not in (select value::bigint from jsonb_array_elements_text(${JSON.stringify(known)}::jsonb))
      order by j.id for update
    ),
    put_back as (
      update akadze.jobs j set state = 'queued', attempt = j.attempt - 1, started_at = null, lease_owner = null, lease_expires_at = null
      from unheld u where j.id = u.id
      returning j.id
    ),
    freed as (update akadze.limit_slots s set job_id = null from put_back p where s.job_id = p.id)
    select (select count(*) from put_back)::int as r`;
}
