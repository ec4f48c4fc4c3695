import { sql } from "drizzle-orm";
import { queryJson, type Db } from "../db/driver.js";

/** One queue as `queues list` shows it: every queue that has jobs or was ever paused. */
export interface QueueRow {
  queue: string;
  paused: boolean;
  /** Queued and due now. */
  due: number;
  /** Queued for later (delay, backoff, snooze). */
  scheduled: number;
  running: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  /** Ended `rate_limited`: held back by their limit past their `limitWait`. */
  rateLimited: number;
  /** Seconds the longest-waiting due job has waited since its run_at; 0 when none is due. */
  oldestDueSeconds: number;
}

/**
 * Every queue with its job counts by state, whether it is paused, and how long its oldest due job waited.
 * @example for (const q of await listQueues(db)) if (q.oldestDueSeconds > 60) alert(q.queue);
 */
export async function listQueues(db: Db, options: { now?: Date } = {}): Promise<QueueRow[]> {
  const now = sql`${(options.now ?? new Date()).toISOString()}::timestamptz`;
  const rows = await queryJson<QueueRow[] | null>(db, sql`
    with counts as (
      select queue,
        count(*) filter (where state = 'queued' and run_at <= ${now}) as due,
        count(*) filter (where state = 'queued' and run_at > ${now}) as scheduled,
        count(*) filter (where state = 'running') as running,
        count(*) filter (where state = 'succeeded') as succeeded,
        count(*) filter (where state = 'failed') as failed,
        count(*) filter (where state = 'cancelled') as cancelled,
        count(*) filter (where state = 'rate_limited') as rate_limited,
        min(run_at) filter (where state = 'queued' and run_at <= ${now}) as oldest_due
      from akadze.jobs group by queue
    ),
    names as (select queue from counts union select name from akadze.queues)
    select jsonb_agg(jsonb_build_object('queue', n.queue, 'paused', coalesce(q.paused, false),
      'due', coalesce(c.due, 0), 'scheduled', coalesce(c.scheduled, 0), 'running', coalesce(c.running, 0),
      'succeeded', coalesce(c.succeeded, 0), 'failed', coalesce(c.failed, 0), 'cancelled', coalesce(c.cancelled, 0),
      'rateLimited', coalesce(c.rate_limited, 0),
      'oldestDueSeconds', coalesce(round(extract(epoch from ${now} - c.oldest_due)::numeric, 3), 0)) order by n.queue) as r
    from names n left join counts c on c.queue = n.queue left join akadze.queues q on q.name = n.queue`);
  return (rows ?? []).map((q) => ({
    queue: q.queue, paused: q.paused, due: q.due, scheduled: q.scheduled, running: q.running, succeeded: q.succeeded,
    failed: q.failed, cancelled: q.cancelled, rateLimited: q.rateLimited, oldestDueSeconds: Number(q.oldestDueSeconds),
  }));
}
