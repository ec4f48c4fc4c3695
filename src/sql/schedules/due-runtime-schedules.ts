import { sql, type SQL } from "drizzle-orm";
import type { StoredSchedule } from "./list-schedules.js";

/** The most runtime schedule definitions one claim brings back; the rest come with the next claims. */
export const RUNTIME_DUE_BATCH = 100;

/** A runtime schedule's definition as a claim brings it back once a slot of it is due. */
export type StoredDefinition = Pick<StoredSchedule, "name" | "task" | "args" | "cron" | "timezone" | "everyMs" | "catchUp" | "skip" | "revision">;

/**
 * A CTE for the claim's round trip: the runtime schedules (of the app's `tasks`) with a slot due at `now`
 * that this claim does not already offer at their current revision, found through `schedules_due_idx`. The
 * process learns their definitions from the report and offers their slots in its next claim, where
 * `enqueueDueSlotsCtes` fires them under the row's lock as it does a schedule in code. Report with
 * `runtimeDueReport()`.
 */
export function dueRuntimeSchedulesCte(now: SQL, tasks: string[], offered: { name: string; revision: number }[]): SQL {
  return sql`sched_runtime_due as (
    select s.name, s.task, s.args, s.cron, s.timezone, s.every_ms, s.catch_up, s.skip_overlap, s.revision
    from akadze.schedules s
    where s.runtime and not s.paused and s.next_slot <= ${now}
      and s.task = any(array(select jsonb_array_elements_text(${JSON.stringify(tasks)}::jsonb)))
      and not exists (select 1 from jsonb_to_recordset(${JSON.stringify(offered)}::jsonb) as o(name text, revision int)
        where o.name = s.name and o.revision = s.revision)
    order by s.next_slot
    limit ${sql.raw(String(RUNTIME_DUE_BATCH))}
  )`;
}

/** The claim's report entry for `dueRuntimeSchedulesCte`: `runtimeDue`, `StoredDefinition[]` or null when none is due. */
export function runtimeDueReport(): Record<string, SQL> {
  return {
    runtimeDue: sql`(select jsonb_agg(jsonb_build_object('name', name, 'task', task, 'args', args, 'cron', cron, 'timezone', timezone,
      'everyMs', every_ms, 'catchUp', catch_up, 'skip', skip_overlap, 'revision', revision)) from sched_runtime_due)`,
  };
}

/**
 * The claim's report entry `runtimeAny`: whether any runtime schedule is active. A claim carries the probe
 * (`dueRuntimeSchedulesCte`) only while one is: the probe costs a claim's planning about 0.3 ms, this a read of
 * schedules_due_idx.
 */
export function runtimeAnyReport(): Record<string, SQL> {
  return { runtimeAny: sql`exists (select 1 from akadze.schedules where runtime and not paused)` };
}
