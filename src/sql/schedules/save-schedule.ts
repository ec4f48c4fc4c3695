import { sql, type SQL } from "drizzle-orm";
import { SCHEDULE_JSON, type StoredSchedule } from "./list-schedules.js";

/** A runtime schedule's definition as stored, with the earliest slot that may fire (`nextSlot`). */
export type ScheduleRow = Pick<StoredSchedule, "name" | "task" | "tenant" | "args" | "cron" | "timezone" | "everyMs" | "catchUp" | "skip" | "paused"> & {
  nextSlot: Date | null;
};

const values = (r: ScheduleRow) => ({
  args: JSON.stringify(r.args), nextSlot: r.nextSlot?.toISOString() ?? null,
});

/** Inserts a runtime schedule; returns its `StoredSchedule`, or null when the name is taken (by any schedule). */
export function insertScheduleStatement(r: ScheduleRow, now: SQL): SQL {
  const v = values(r);
  return sql`
    with s as (
      insert into akadze.schedules as s (name, task, runtime, tenant, args, cron, timezone, every_ms, catch_up, skip_overlap, paused,
        next_slot, seen_at, created_at, updated_at)
      values (${r.name}, ${r.task}, true, ${r.tenant}, ${v.args}::jsonb, ${r.cron}, ${r.timezone}, ${r.everyMs}, ${r.catchUp}, ${r.skip},
        ${r.paused}, ${v.nextSlot}::timestamptz, ${now}, ${now}, ${now})
      on conflict (name) do nothing
      returning *
    )
    select ${SCHEDULE_JSON} as r from s`;
}

/**
 * Rewrites a runtime schedule's definition if its row still has `revision` (the one the change was made
 * from), bumping the revision so slots offered from the old definition fire nothing. Returns the new
 * `StoredSchedule`, or null when the row changed meanwhile or is gone.
 */
export function updateScheduleStatement(r: ScheduleRow, revision: number, now: SQL): SQL {
  const v = values(r);
  return sql`
    with s as (
      update akadze.schedules s set task = ${r.task}, tenant = ${r.tenant}, args = ${v.args}::jsonb, cron = ${r.cron}, timezone = ${r.timezone},
        every_ms = ${r.everyMs}, catch_up = ${r.catchUp}, skip_overlap = ${r.skip}, paused = ${r.paused}, next_slot = ${v.nextSlot}::timestamptz,
        revision = s.revision + 1, updated_at = ${now}
      where s.name = ${r.name} and s.runtime and s.revision = ${revision}
      returning s.*
    )
    select ${SCHEDULE_JSON} as r from s`;
}
