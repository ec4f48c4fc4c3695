import { sql, type SQL } from "drizzle-orm";
import { defaultBackoffSql } from "./time.js";

/** How many expired leases one claim recovers at most; the rest wait for the next claim. */
export const RECOVER_LIMIT = 500;

/**
 * CTEs `recovered` and `recover_freed` for the claim's round trip: jobs whose lease expired go back to
 * `queued`. A job whose body may have started (`started_at` set when it was handed to a slot) spends its
 * attempt and follows the default backoff, `failed` on its last attempt; a job that was only prefetched
 * gets its attempt back and stays due, so a crash never charges (or fails) a job that never ran.
 */
export function recoverExpiredLeasesCtes(now: SQL): SQL[] {
  return [
    sql`recovered as (
      update akadze.jobs j set
        state = case when x.started and j.attempt >= j.max_attempts then 'failed' else 'queued' end,
        attempt = case when x.started then j.attempt else j.attempt - 1 end,
        run_at = case when not x.started or j.attempt >= j.max_attempts then j.run_at else ${now} + ${defaultBackoffSql(sql`j.attempt`)} end,
        finished_at = case when x.started and j.attempt >= j.max_attempts then ${now} end,
        started_at = case when x.started then j.started_at end,
        lease_owner = null, lease_expires_at = null,
        errors = case when not x.started then j.errors else j.errors || jsonb_build_array(jsonb_build_object('attempt', j.attempt,
          'at', ${now}, 'kind', 'LeaseExpired', 'message', 'the invocation running this job stopped renewing its lease', 'stack', null)) end
      from (select id, started_at is not null as started from akadze.jobs where state = 'running' and lease_expires_at < ${now}
            order by lease_expires_at limit ${RECOVER_LIMIT} for update skip locked) x
      where j.id = x.id
      returning j.id, j.task, j.queue, j.attempt, j.state
    )`,
    sql`recover_freed as (
      update akadze.limit_slots s set job_id = null from recovered r where s.job_id = r.id
    )`,
  ];
}
