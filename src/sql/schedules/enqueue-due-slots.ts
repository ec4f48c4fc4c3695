import { sql, type SQL } from "drizzle-orm";
import { msInterval } from "../time.js";

/** How often an invocation refreshes a schedule's `seen_at` when no slot is due (one row write per minute). */
export const SEEN_REFRESH = "1 minute";

/**
 * One schedule as an invocation offers it to the claim: the slots around its estimate of the database's
 * clock, with the job it would enqueue and its policies. The statement fires the slots due on the database's clock.
 */
export interface ScheduleSlotOffer {
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
  /** How many of the missed slots fire after a gap, latest first (1: the latest only). */
  catchUp: number;
  /** Drop the due slot while the job of the last fired one is still queued or running. */
  skip: boolean;
  /** A runtime schedule's revision as this process read it (it fires only while the row still has it); null for one in code. */
  revision: number | null;
}

/** What the schedule CTEs report in the claim's result (under `schedules`). */
export interface ScheduleSlotReport {
  /** The statement's clock, epoch ms. */
  now: number;
  /** The slot each offered schedule had due, epoch ms; absent if none of its candidates was due yet. */
  due: Record<string, number> | null;
  /** Runtime schedules offered from a definition their row no longer has (changed, paused or deleted). */
  gone: string[] | null;
}

/**
 * CTEs for the claim's round trip that enqueue each due slot exactly once, whatever the number of
 * concurrent invocations and however their clocks differ: the due slot is the latest offered one at or
 * before `now` (the database's `now()` unless a test clock is passed), and it fires only for the invocation
 * that moves the schedule's `last_slot` forward under the row's lock. A concurrent invocation waits for that
 * lock (only while a slot fires, or once a minute to refresh `seen_at`), then sees the new `last_slot` and
 * fires nothing. Rows are locked in name order, new rows are inserted (ON CONFLICT DO NOTHING) after every
 * lock is held, so invocations cannot deadlock. A schedule without a row fires its due slot only if it came
 * due less than `firstSightGraceMs` ago. With `catchUp` n, the invocation that moves `last_slot` enqueues the
 * latest n offered slots after it; with `skip`, none while the job of the last fired slot is still in
 * `akadze.jobs` (queued or running), and `last_slot` moves on all the same (the slot is dropped, not kept for
 * later). A runtime schedule (`revision` set) fires only while its row has that revision and is not paused,
 * and never a slot before its row's `next_slot` (its creation or resume). `scheduled_jobs` returns the ids of
 * the enqueued jobs; report with `scheduleSlotReport(now)`.
 */
export function enqueueDueSlotsCtes(offers: ScheduleSlotOffer[], now: SQL, firstSightGraceMs: number): SQL[] {
  const payload = JSON.stringify(offers.map((d) => ({
    name: d.name, task: d.task, slots: d.slots.map((slot) => slot.toISOString()), ends: d.ends, queue: d.queue, args: d.args,
    priority: d.priority, max_attempts: d.maxAttempts, catch_up: d.catchUp, skip: d.skip, revision: d.revision,
  })));
  return [
    sql`sched_offered as (
      select * from jsonb_to_recordset(${payload}::jsonb) as d(name text, task text, slots jsonb, ends boolean, queue text, args jsonb,
        priority smallint, max_attempts int, catch_up int, skip boolean, revision int)
    )`,
    // The latest offered slot at or before the clock is the schedule's latest due slot only if an offered slot
    // comes after the clock (or none exists): every offered slot already due means the process's guess was behind
    // by more than a period, and the slot it would pick is stale. Then none fires; the report teaches the offset.
    sql`sched_due as (
      select d.name, d.task, d.queue, d.args, d.priority, d.max_attempts, d.catch_up, d.skip, d.revision, d.slots, c.slot, c.next_slot,
        c.slot > ${now} - ${msInterval(sql`${firstSightGraceMs}`)} as fire_if_new
      from sched_offered d
      cross join lateral (select max(x::timestamptz) filter (where x::timestamptz <= ${now}) as slot,
          min(x::timestamptz) filter (where x::timestamptz > ${now}) as next_slot
        from jsonb_array_elements_text(d.slots) x) c
      where c.slot is not null and (c.next_slot is not null or d.ends)
    )`,
    // After waiting for a lock, Postgres re-checks the row as the lock holder left it and computes
    // the target list from that version, so `advance` is the truth under the lock. (`busy` reads the jobs
    // in the statement's snapshot: a job enqueued by a statement this one waited for is not seen, which
    // matters only when two invocations fire two different slots of one schedule at the same moment.)
    sql`sched_locked as (
      select s.name, s.last_slot as prior, s.next_slot as floor,
        coalesce((s.last_slot is null or s.last_slot < d.slot) and (not s.runtime or s.next_slot <= d.slot), false) as advance,
        d.skip and exists (select 1 from akadze.jobs j where j.id = s.last_job_id) as busy
      from akadze.schedules s join sched_due d on d.name = s.name
      where s.runtime = (d.revision is not null)
        and (d.revision is null or (s.revision = d.revision and not s.paused))
        and (s.last_slot is null or s.last_slot < d.slot or s.task <> d.task or s.seen_at < ${now} - interval '${sql.raw(SEEN_REFRESH)}')
      order by s.name
      for update of s
    )`,
    // The slots this statement enqueues, latest first (`rank`), each with its job's id drawn here so the
    // schedule's row can record the latest one. A schedule without a row draws one for its due slot, used
    // only if this statement inserts the row.
    sql`sched_fired as (
      select f.name, f.slot, f.rank, nextval(pg_get_serial_sequence('akadze.jobs', 'id')) as id
      from (
        select d.name, x.slot, d.catch_up, row_number() over (partition by d.name order by x.slot desc) as rank
        from sched_due d
        left join sched_locked l on l.name = d.name
        cross join lateral (select y::timestamptz as slot from jsonb_array_elements_text(d.slots) y) x
        where x.slot <= ${now} and (
          (l.advance and not l.busy and (l.prior is null or x.slot > l.prior) and (l.floor is null or x.slot >= l.floor))
          or (l.name is null and d.revision is null and d.fire_if_new and x.slot = d.slot
            and not exists (select 1 from akadze.schedules s where s.name = d.name)))
      ) f
      where f.rank <= f.catch_up
    )`,
    sql`sched_updated as (
      update akadze.schedules s set
        last_slot = case when l.advance then d.slot else s.last_slot end,
        next_slot = case when l.advance and s.runtime then d.next_slot else s.next_slot end,
        last_job_id = coalesce((select f.id from sched_fired f where f.name = l.name and f.rank = 1), s.last_job_id),
        task = d.task, seen_at = ${now}
      from sched_locked l join sched_due d on d.name = l.name
      where s.name = l.name
      returning s.name
    )`,
    sql`sched_added as (
      insert into akadze.schedules (name, task, last_slot, seen_at, last_job_id)
      select d.name, d.task, d.slot, ${now}, (select f.id from sched_fired f where f.name = d.name and f.rank = 1) from sched_due d
      where d.revision is null and not exists (select 1 from akadze.schedules s where s.name = d.name)
        and (select count(*) from sched_locked) >= 0 -- take every row lock before inserting (lock order)
      order by d.name
      on conflict (name) do nothing
      returning name
    )`,
    sql`scheduled_jobs as (
      insert into akadze.jobs (id, task, queue, args, priority, max_attempts, run_at, created_at)
      overriding system value
      select f.id, d.task, d.queue, d.args, d.priority, d.max_attempts, f.slot, ${now}
      from sched_fired f join sched_due d on d.name = f.name
      where f.name in (select name from sched_locked) or f.name in (select name from sched_added)
      order by d.name, f.slot
      returning id
    )`,
  ];
}

/** The claim's report entries for `enqueueDueSlotsCtes`: `scheduled` (jobs enqueued) and `schedules` (a `ScheduleSlotReport`). */
export function scheduleSlotReport(now: SQL): Record<string, SQL> {
  return {
    scheduled: sql`(select count(*) from scheduled_jobs)`,
    schedules: sql`jsonb_build_object('now', extract(epoch from ${now}) * 1000,
      'due', (select jsonb_object_agg(name, extract(epoch from slot) * 1000) from sched_due),
      'gone', (select jsonb_agg(o.name) from sched_offered o where o.revision is not null and not exists (
        select 1 from akadze.schedules s where s.name = o.name and s.runtime and s.revision = o.revision and not s.paused)))`,
  };
}
