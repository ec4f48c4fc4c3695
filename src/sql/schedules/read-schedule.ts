import { sql, type SQL } from "drizzle-orm";
import { SCHEDULE_JSON } from "./list-schedules.js";

/** One stored schedule (`StoredSchedule`) by name, or null. */
export function readScheduleStatement(name: string): SQL {
  return sql`select ${SCHEDULE_JSON} as r from akadze.schedules s where s.name = ${name}`;
}
