import { sql, type SQL } from "drizzle-orm";

/**
 * Per queue at `now`, as a subquery: every queue that has jobs or a row in akadze.queues, whether it is
 * paused, its jobs by state (queued split into `due` and `scheduled`), its running jobs whose lease
 * expired, and how long its oldest due job has waited (seconds, 0 when none is due). `listQueuesStatement`
 * and the metrics read the same counts.
 */
export function queueCounts(now: SQL): SQL {
  return sql`
    select coalesce(c.queue, q.name) as queue, coalesce(q.paused, false) as paused,
      coalesce(c.due, 0) as due, coalesce(c.scheduled, 0) as scheduled, coalesce(c.running, 0) as running,
      coalesce(c.expired, 0) as expired, coalesce(c.succeeded, 0) as succeeded, coalesce(c.failed, 0) as failed,
      coalesce(c.cancelled, 0) as cancelled, coalesce(c.rate_limited, 0) as rate_limited,
      coalesce(round(extract(epoch from ${now} - c.oldest_due)::numeric, 3), 0) as oldest_due_seconds
    from (
      select queue,
        count(*) filter (where state = 'queued' and run_at <= ${now}) as due,
        count(*) filter (where state = 'queued' and run_at > ${now}) as scheduled,
        count(*) filter (where state = 'running') as running,
        count(*) filter (where state = 'running' and lease_expires_at < ${now}) as expired,
        count(*) filter (where state = 'succeeded') as succeeded,
        count(*) filter (where state = 'failed') as failed,
        count(*) filter (where state = 'cancelled') as cancelled,
        count(*) filter (where state = 'rate_limited') as rate_limited,
        min(run_at) filter (where state = 'queued' and run_at <= ${now}) as oldest_due
      from akadze.all_jobs group by queue
    ) c full join akadze.queues q on q.name = c.queue`;
}
