import { sql } from "drizzle-orm";
import { queryJson, type Db } from "../db/driver.js";

/** A limit with its current use. */
export interface LimitRow {
  key: string;
  maxStarts: number | null;
  windowMs: number | null;
  maxRunning: number | null;
  /** Jobs holding one of its `maxRunning` slots now. */
  running: number;
  /** Starts inside the current sliding window. */
  startsInWindow: number;
}

/**
 * Every limit with how much of it is in use.
 * @example const [vendor] = (await listLimits(db)).filter((l) => l.key === "vendor");
 */
export async function listLimits(db: Db, options: { now?: Date } = {}): Promise<LimitRow[]> {
  const now = sql`${(options.now ?? new Date()).toISOString()}::timestamptz`;
  const rows = await queryJson<LimitRow[] | null>(db, sql`
    select jsonb_agg(jsonb_build_object('key', l.key, 'maxStarts', l.max_starts, 'windowMs', l.window_ms, 'maxRunning', l.max_running,
      'running', (select count(*) from akadze.limit_slots s where s.key = l.key and s.job_id is not null),
      'startsInWindow', case when l.window_ms is null then 0 else (select count(*) from akadze.limit_tokens t
        where t.key = l.key and t.last_start > ${now} - (l.window_ms::float8 * interval '1 millisecond')) end) order by l.key) as r
    from akadze.limits l`);
  return (rows ?? []).map((l) => ({
    key: l.key, maxStarts: l.maxStarts, windowMs: l.windowMs === null ? null : Number(l.windowMs), maxRunning: l.maxRunning,
    running: l.running, startsInWindow: l.startsInWindow,
  }));
}
