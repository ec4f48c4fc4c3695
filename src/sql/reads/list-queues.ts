import { sql, type SQL } from "drizzle-orm";
import { queueCounts } from "./queue-counts.js";

/** Every queue with its counts at `now`, by name, as one jsonb array or null. */
export function listQueuesStatement(now: SQL): SQL {
  return sql`
    select jsonb_agg(jsonb_build_object('queue', c.queue, 'paused', c.paused, 'due', c.due, 'scheduled', c.scheduled,
      'running', c.running, 'claimed', c.claimed, 'succeeded', c.succeeded, 'failed', c.failed, 'cancelled', c.cancelled,
      'rateLimited', c.rate_limited, 'estimated', c.estimated, 'oldestDueSeconds', c.oldest_due_seconds) order by c.queue) as r
    from (${queueCounts(now)}) c`;
}
