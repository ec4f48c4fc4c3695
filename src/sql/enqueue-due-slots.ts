import { sql, type SQL } from "drizzle-orm";
import { msInterval } from "./time.js";

/** How often an invocation refreshes a schedule's `seen_at` when no slot is due (one row write per minute). */
export const SEEN_REFRESH = "1 minute";

/**
 * One schedule as an invocation offers it to the claim: the slots around its estimate of the database's
 * clock, with the job it would enqueue. The statement keeps the latest slot due on the database's clock.
 */
export interface SlotOffer {
  name: string;
  task: string;
  /** Candidate slots, consecutive, any order; those after the statement's clock are ignored. */
  slots: Date[];
  /** The schedule has no slot after the latest of `slots`. */
  ends: boolean;
  queue: string;
  args: unknown;
  priority: number;
  maxAttempts: number;
}

/** What the schedule CTEs report in the claim's result (under `schedules`). */
export interface SlotReport {
  /** The statement's clock, epoch ms. */
  now: number;
  /** The slot each offered schedule had due, epoch ms; absent if none of its candidates was due yet. */
  due: Record<string, number> | null;
}

/**
 * CTEs for the claim's round trip that enqueue each due slot exactly once, whatever the number of
 * concurrent invocations and however their clocks differ: the due slot is the latest offered one at or
 * before `now` (the database's `now()` unless a test clock is passed), and it fires only for the invocation
 * that moves the schedule's `last_slot` forward under the row's lock. A concurrent invocation waits for that
 * lock (only while a slot fires, or once a minute to refresh `seen_at`), then sees the new `last_slot` and
 * fires nothing. Rows are locked in name order, new rows are inserted (ON CONFLICT DO NOTHING) after every
 * lock is held, so invocations cannot deadlock. A schedule without a row fires its due slot only if it came
 * due less than `firstSightGraceMs` ago. `scheduled_jobs` returns the ids of the enqueued jobs; report
 * with `slotReport(now)`.
 */
export function enqueueDueSlotsCtes(offers: SlotOffer[], now: SQL, firstSightGraceMs: number): SQL[] {
  const payload = JSON.stringify(offers.map((d) => ({
    name: d.name, task: d.task, slots: d.slots.map((slot) => slot.toISOString()), ends: d.ends, queue: d.queue, args: d.args,
    priority: d.priority, max_attempts: d.maxAttempts,
  })));
  return [
    sql`sched_offered as (
      select * from jsonb_to_recordset(${payload}::jsonb) as d(name text, task text, slots jsonb, ends boolean, queue text, args jsonb,
        priority smallint, max_attempts int)
    )`,
    // The latest offered slot at or before the clock is the schedule's latest due slot only if an offered slot
    // comes after the clock (or none exists): every offered slot already due means the process's guess was behind
    // by more than a period, and the slot it would pick is stale. Then none fires; the report teaches the offset.
    sql`sched_due as (
      select d.name, d.task, d.queue, d.args, d.priority, d.max_attempts, c.slot,
        c.slot > ${now} - ${msInterval(sql`${firstSightGraceMs}`)} as fire_if_new
      from sched_offered d
      cross join lateral (select max(x::timestamptz) filter (where x::timestamptz <= ${now}) as slot,
          bool_or(x::timestamptz > ${now}) as later
        from jsonb_array_elements_text(d.slots) x) c
      where c.slot is not null and (c.later or d.ends)
    )`,
    // After waiting for a lock, Postgres re-checks the row as the lock holder left it and computes
    // the target list from that version, so `fire` is the truth under the lock.
    sql`sched_locked as (
      select s.name, (s.last_slot is null or s.last_slot < d.slot) as fire
      from akadze.schedules s join sched_due d on d.name = s.name
      where s.last_slot is null or s.last_slot < d.slot or s.task <> d.task or s.seen_at < ${now} - interval '${sql.raw(SEEN_REFRESH)}'
      order by s.name
      for update of s
    )`,
    sql`sched_updated as (
      update akadze.schedules s set
        last_slot = case when l.fire then d.slot else s.last_slot end, task = d.task, seen_at = ${now}
      from sched_locked l join sched_due d on d.name = l.name
      where s.name = l.name
      returning s.name
    )`,
    sql`sched_added as (
      insert into akadze.schedules (name, task, last_slot, seen_at)
      select d.name, d.task, d.slot, ${now} from sched_due d
      where not exists (select 1 from akadze.schedules s where s.name = d.name)
        and (select count(*) from sched_locked) >= 0 -- take every row lock before inserting (lock order)
      order by d.name
      on conflict (name) do nothing
      returning name
    )`,
    sql`scheduled_jobs as (
      insert into akadze.jobs (task, queue, args, priority, max_attempts, run_at, created_at)
      select d.task, d.queue, d.args, d.priority, d.max_attempts, d.slot, ${now}
      from sched_due d
      where d.name in (select name from sched_locked where fire)
         or (d.fire_if_new and d.name in (select name from sched_added))
      order by d.name
      returning id
    )`,
  ];
}

/** The claim's report entries for `enqueueDueSlotsCtes`: `scheduled` (jobs enqueued) and `schedules` (a `SlotReport`). */
export function slotReport(now: SQL): Record<string, SQL> {
  return {
    scheduled: sql`(select count(*) from scheduled_jobs)`,
    schedules: sql`jsonb_build_object('now', extract(epoch from ${now}) * 1000,
      'due', (select jsonb_object_agg(name, extract(epoch from slot) * 1000) from sched_due))`,
  };
}

