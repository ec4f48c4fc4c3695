import { sql, type SQL } from "drizzle-orm";
import { workerStatus } from "./worker-status.js";

/**
 * Registry rows with their status at `now`, newest first, as one jsonb array or null: the live ones
 * plus those seen since `since` (every row when `since` is null), at most `limit`.
 */
export function listWorkersStatement(now: SQL, since: SQL | null, limit: number): SQL {
  return sql`
    with s as (${workerStatus(now, since ? sql`(w.stopped_at is null or w.last_seen_at >= ${since})` : sql`true`)})
    select jsonb_agg(jsonb_build_object('id', id, 'kind', kind, 'queues', queues, 'status', status,
      'startedAt', started_at, 'lastSeenAt', last_seen_at,
      'stoppedAt', case when stopped_at is null and status = 'stopped' then last_seen_at else stopped_at end,
      'jobsDone', jobs_done, 'running', held, 'startedBy', started_by) order by last_seen_at desc, id) as r
    from (select * from s where ${since ? sql`status = 'live' or last_seen_at >= ${since}` : sql`true`}
          order by last_seen_at desc, id limit ${limit}) s`;
}
