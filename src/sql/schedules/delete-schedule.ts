import { sql, type SQL } from "drizzle-orm";

/** Deletes a runtime schedule (a schedule in code is not deleted: its row only records its last slot); true if there was one. */
export function deleteScheduleStatement(name: string): SQL {
  return sql`
    with gone as (delete from akadze.schedules where name = ${name} and runtime returning 1)
    select to_jsonb(exists (select 1 from gone)) as r`;
}
