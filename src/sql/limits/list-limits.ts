import { sql, type SQL } from "drizzle-orm";
import { limitUsage } from "./limit-usage.js";

/** Every limit with its use at `now`, by key, as one jsonb array or null. */
export function listLimitsStatement(now: SQL): SQL {
  return sql`
    select jsonb_agg(jsonb_build_object('key', u.key, 'maxStarts', u.max_starts, 'windowMs', u.window_ms, 'maxRunning', u.max_running,
      'running', u.running, 'startsInWindow', u.starts_in_window) order by u.key) as r
    from (${limitUsage(now)}) u`;
}
