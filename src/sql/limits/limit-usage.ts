import { sql, type SQL } from "drizzle-orm";
import { msInterval } from "../time.js";

/**
 * Every limit with how much of it is in use at `now`, as a subquery (key, max_starts, window_ms,
 * max_running, running, starts_in_window): `listLimitsStatement` and the metrics read the same counts.
 */
export function limitUsage(now: SQL): SQL {
  return sql`
    select l.key, l.max_starts, l.window_ms, l.max_running,
      (select count(*) from akadze.limit_slots s where s.key = l.key and s.job_id is not null) as running,
      case when l.window_ms is null then 0 else (select count(*) from akadze.limit_tokens t
        where t.key = l.key and t.last_start > ${now} - ${msInterval(sql`l.window_ms`)}) end as starts_in_window
    from akadze.limits l`;
}
