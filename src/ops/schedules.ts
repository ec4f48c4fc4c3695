import { sql } from "drizzle-orm";
import { queryJson, type Db } from "../db/driver.js";
import { iso } from "./jobs.js";

/** A schedule as stored in `akadze.schedules`; columns added later pass through, camelCased. */
export interface ScheduleRow { name: string; task: string; lastSlot: string | null; seenAt: string; [column: string]: unknown }

const camel = (column: string) => column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());

/**
 * The schedules invocations have recorded, read straight from the table so the CLI works with any app
 * (it does not need the app's schedule definitions).
 * @example for (const s of await readSchedules(db)) console.log(s.name, s.lastSlot);
 */
export async function readSchedules(db: Db): Promise<ScheduleRow[]> {
  const rows = await queryJson<Record<string, unknown>[] | null>(db, sql`select jsonb_agg(to_jsonb(s) order by s.name) as r from akadze.schedules s`);
  return (rows ?? []).map((row) => {
    const { name, task, last_slot, seen_at, ...rest } = row;
    const extra = Object.fromEntries(Object.entries(rest).map(([k, v]) => [camel(k), v]));
    return { name: String(name), task: String(task), lastSlot: iso(last_slot as string | null), seenAt: iso(seen_at as string)!, ...extra };
  });
}
