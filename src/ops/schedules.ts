import { sql } from "drizzle-orm";
import { queryJson, type Db } from "../db/driver.js";

/** A schedule as stored in `akadze.schedules` (extra columns pass through). */
export interface ScheduleRow { name: string; task: string; last_slot: string | null; seen_at: string; [column: string]: unknown }

/**
 * The schedules invocations have seen, read straight from the table, so the CLI works with any app.
 * @example for (const s of await readSchedules(db)) console.log(s.name, s.last_slot);
 */
export async function readSchedules(db: Db): Promise<ScheduleRow[]> {
  const rows = await queryJson<ScheduleRow[] | null>(db, sql`select jsonb_agg(to_jsonb(s) order by s.name) as r from akadze.schedules s`);
  return rows ?? [];
}
