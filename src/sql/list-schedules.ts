import { sql, type SQL } from "drizzle-orm";

/** A stored schedule row. */
export interface StoredSchedule { name: string; task: string; lastSlot: string | null; seenAt: string }

/** Every stored schedule, by name, as one jsonb array. */
export function listSchedulesStatement(): SQL {
  return sql`
    select coalesce(jsonb_agg(jsonb_build_object('name', name, 'task', task, 'lastSlot', last_slot, 'seenAt', seen_at) order by name), '[]'::jsonb) as r
    from akadze.schedules`;
}
