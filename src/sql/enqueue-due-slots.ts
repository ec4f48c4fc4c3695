import { sql, type SQL } from "drizzle-orm";
import { timestamp } from "./time.js";

/** How often an invocation refreshes a schedule's `seen_at` when no slot is due (one row write per minute). */
export const SEEN_REFRESH = "1 minute";

/** One schedule's latest slot, as an invocation computed it, with the job it would enqueue. */
export interface DueSlot {
  name: string;
  task: string;
  slot: Date;
  /** Enqueue this slot if the schedule has no row yet (first sight); otherwise only record it. */
  fireIfNew: boolean;
  queue: string;
  args: unknown;
  priority: number;
  maxAttempts: number;
}

/**
 * CTEs for the claim's round trip that enqueue each due slot exactly once, whatever the number of
 * concurrent invocations: a slot fires only for the invocation that moves the schedule's
 * `last_slot` forward under the row's lock. A concurrent invocation waits for that lock (only while
 * a slot fires, or once a minute to refresh `seen_at`), then sees the new `last_slot` and fires
 * nothing. Rows are locked in name order, new rows are inserted (ON CONFLICT DO NOTHING) after every
 * lock is held, so invocations cannot deadlock. `scheduled_jobs` returns the ids of the enqueued jobs.
 */
export function enqueueDueSlotsCtes(due: DueSlot[], now: Date): SQL[] {
  const at = timestamp(now);
  const payload = JSON.stringify(due.map((d) => ({
    name: d.name, task: d.task, slot: d.slot.toISOString(), fire_if_new: d.fireIfNew, queue: d.queue, args: d.args,
    priority: d.priority, max_attempts: d.maxAttempts,
  })));
  return [
    sql`sched_due as (
      select * from jsonb_to_recordset(${payload}::jsonb) as d(name text, task text, slot timestamptz, fire_if_new boolean,
        queue text, args jsonb, priority smallint, max_attempts int)
    )`,
    // After waiting for a lock, Postgres re-checks the row as the lock holder left it and computes
    // the target list from that version, so `fire` is the truth under the lock.
    sql`sched_locked as (
      select s.name, (s.last_slot is null or s.last_slot < d.slot) as fire
      from akadze.schedules s join sched_due d on d.name = s.name
      where s.last_slot is null or s.last_slot < d.slot or s.task <> d.task or s.seen_at < ${at} - interval '${sql.raw(SEEN_REFRESH)}'
      order by s.name
      for update of s
    )`,
    sql`sched_updated as (
      update akadze.schedules s set
        last_slot = case when l.fire then d.slot else s.last_slot end, task = d.task, seen_at = ${at}
      from sched_locked l join sched_due d on d.name = l.name
      where s.name = l.name
      returning s.name
    )`,
    sql`sched_added as (
      insert into akadze.schedules (name, task, last_slot, seen_at)
      select d.name, d.task, d.slot, ${at} from sched_due d
      where not exists (select 1 from akadze.schedules s where s.name = d.name)
        and (select count(*) from sched_locked) >= 0 -- take every row lock before inserting (lock order)
      order by d.name
      on conflict (name) do nothing
      returning name
    )`,
    sql`scheduled_jobs as (
      insert into akadze.jobs (task, queue, args, priority, max_attempts, run_at, created_at)
      select d.task, d.queue, d.args, d.priority, d.max_attempts, d.slot, ${at}
      from sched_due d
      where d.name in (select name from sched_locked where fire)
         or (d.fire_if_new and d.name in (select name from sched_added))
      order by d.name
      returning id
    )`,
  ];
}
