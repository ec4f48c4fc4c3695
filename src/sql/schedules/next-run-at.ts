import { sql, type SQL } from "drizzle-orm";

/**
 * The earliest `run_at` after `now` of a queued job in an unpaused queue (null: none), answered as
 * `{ at }`: when the next job comes due if nothing else changes. Reads the claim's partial index.
 */
export function nextRunAtStatement(now: SQL): SQL {
  return sql`
    select jsonb_build_object('at', min(j.run_at)) as r
    from akadze.jobs j
    where j.state = 'queued' and j.run_at > ${now}
      and j.queue not in (select name from akadze.queues where paused)`;
}
