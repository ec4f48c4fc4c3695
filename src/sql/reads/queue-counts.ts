import { sql, type SQL } from "drizzle-orm";
import { HISTORY_SAMPLED, historyCounts } from "../history/history-counts.js";

/**
 * Per queue at `now`, as a subquery: every queue that has jobs or a row in akadze.queues, whether it is
 * paused, its jobs by state (queued split into `due` and `scheduled`, running into `running`, started, and
 * `claimed`, held by a worker or invocation but not started yet: a prefetch), its running jobs whose lease
 * expired, and how long its oldest due job has waited (seconds, 0 when none is due). `listQueuesStatement`
 * and the metrics read the same counts. `estimated`: the history's counts (succeeded, cancelled,
 * rate_limited) come from a sample, the history being large (history-counts.ts). `history`: the history's
 * counts by queue and state (queue, state, n), when the caller has them already.
 */
export function queueCounts(now: SQL, history: SQL = historyCounts(["queue", "state"])): SQL {
  return sql`
    select coalesce(c.queue, q.name) as queue, coalesce(q.paused, false) as paused,
      coalesce(c.due, 0) as due, coalesce(c.scheduled, 0) as scheduled, coalesce(c.running, 0) as running,
      coalesce(c.claimed, 0) as claimed, coalesce(c.expired, 0) as expired, coalesce(c.succeeded, 0) as succeeded, coalesce(c.failed, 0) as failed,
      coalesce(c.cancelled, 0) as cancelled, coalesce(c.rate_limited, 0) as rate_limited, ${HISTORY_SAMPLED} as estimated,
      coalesce(round(extract(epoch from ${now} - c.oldest_due)::numeric, 3), 0) as oldest_due_seconds
    from (
      select queue,
        sum(n) filter (where state = 'queued' and run_at <= ${now}) as due,
        sum(n) filter (where state = 'queued' and run_at > ${now}) as scheduled,
        sum(n) filter (where state = 'running' and started_at is not null) as running,
        sum(n) filter (where state = 'running' and started_at is null) as claimed,
        sum(n) filter (where state = 'running' and lease_expires_at < ${now}) as expired,
        sum(n) filter (where state = 'succeeded') as succeeded,
        sum(n) filter (where state = 'failed') as failed,
        sum(n) filter (where state = 'cancelled') as cancelled,
        sum(n) filter (where state = 'rate_limited') as rate_limited,
        min(run_at) filter (where state = 'queued' and run_at <= ${now}) as oldest_due
      from (
        -- Live jobs and dead letters row by row; the history (which retention keeps large) by historyCounts.
        select queue, state, run_at, coalesce(j.lease_expires_at, o.expires_at) as lease_expires_at, started_at, 1::bigint as n
          from akadze.jobs j left join akadze.owners o on o.owner = j.lease_owner
        union all select queue, 'failed', null, null, null, count(*) from akadze.failed_jobs group by queue
        union all select queue, state, null, null, null, n from (${history}) h
      ) a
      group by queue
    ) c full join akadze.queues q on q.name = c.queue`;
}
