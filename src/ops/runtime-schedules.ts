import * as v from "valibot";
import type { App } from "../app/app.js";
import { AkadzeError, DuplicateSchedule, InvalidInput } from "../core/errors.js";
import { NameSchema, parseOrThrow } from "../core/validate.js";
import { RuntimeScheduleSchema, ScheduleChangeSchema } from "../core/schedule-input.js";
import { queryJson, type Db } from "../db/query.js";
import type { Duration } from "../core/duration.js";
import { defineSchedule, policyOf, storedSchedule, type Schedule, type ScheduleEntry, type SchedulePolicy } from "../app/schedule.js";
import { deleteScheduleStatement } from "../sql/schedules/delete-schedule.js";
import type { StoredSchedule } from "../sql/schedules/list-schedules.js";
import { readScheduleStatement } from "../sql/schedules/read-schedule.js";
import { insertScheduleStatement, updateScheduleStatement, type ScheduleRow } from "../sql/schedules/save-schedule.js";
import { timestamp } from "../sql/time.js";

/**
 * A schedule made at runtime: an `addSchedules` entry, stored in the database, optionally for a tenant.
 * @example const entry: RuntimeScheduleEntry = { name: "tenant-7.report", tenant: "7", task: "report", cron: "0 9 * * *", timezone: "Europe/Berlin", args: { tenant: 7 } };
 */
export type RuntimeScheduleEntry = ScheduleEntry & {
  /** Whose schedule it is: `listSchedules(db, { tenant })` lists one tenant's. Default none. */
  tenant?: string | null;
  /** Created paused: no slot fires until `resumeSchedule`. Default false. */
  paused?: boolean;
};

/**
 * What `updateSchedule` changes; fields not given keep their value. `cron` and `every` replace each other
 * (a new `cron` without `timezone` runs in UTC); new args or a new task are checked against the task's schema.
 * @example const change: ScheduleChange = { cron: "0 10 * * *", timezone: "Europe/Berlin" };
 */
export interface ScheduleChange extends SchedulePolicy {
  task?: string;
  cron?: string;
  every?: Duration;
  timezone?: string;
  args?: unknown;
  tenant?: string | null;
  paused?: boolean;
}

/** A runtime schedule as stored. @example const s: RuntimeSchedule = await createSchedule(db, entry, { app }); s.nextSlot; */
export interface RuntimeSchedule extends Required<SchedulePolicy> {
  name: string;
  task: string;
  tenant: string | null;
  args: unknown;
  cron: string | null;
  timezone: string | null;
  /** The period of an `every` schedule, in ms. */
  everyMs: number | null;
  paused: boolean;
  /** The last slot enqueued (or dropped by overlap "skip"), null until one fired. */
  lastSlot: Date | null;
  /** The earliest slot that may fire next (null: the cron expression has no more). */
  nextSlot: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** The app whose tasks a runtime schedule enqueues (its schema checks the args), and a test clock. */
export interface ScheduleOptions {
  app: App;
  /** When the change is made: slots before it never fire. Default the app's clock. */
  now?: Date;
}

const AppSchema = v.custom<App>((a) => (a as App | null)?.tasks instanceof Map, "app must be what createApp returns");
const OptionsSchema = v.strictObject({ app: AppSchema, now: v.optional(v.date("now must be a valid Date")) });
const ClockSchema = v.strictObject({ app: v.optional(AppSchema), now: v.optional(v.date("now must be a valid Date")) });

/** Whose clock a pause or resume reads: `now`, else the app's, else the host's. */
export interface PauseOptions { app?: App; now?: Date }

/** How many times `updateSchedule` re-reads a row that another writer changed under it before it gives up. */
const UPDATE_ATTEMPTS = 5;

/**
 * Stores a schedule that every invocation of apps registering its task fires, each slot once as for
 * schedules in code, from the first slot after `now` (none before). The name is unique among all schedules,
 * those in code included. Throws InvalidInput, and stores nothing, for an unknown task, args the task's
 * schema rejects, a bad cron expression, time zone, `every` or policy; DuplicateSchedule (an InvalidInput) for a
 * name already taken.
 * @example
 * await createSchedule(db, { name: "tenant-7.report", tenant: "7", task: "report", cron: "0 9 * * *",
 *   timezone: "Europe/Berlin", args: { tenant: 7 }, catchUp: { all: 3 } }, { app });
 */
export async function createSchedule(db: Db, entry: RuntimeScheduleEntry, options: ScheduleOptions): Promise<RuntimeSchedule> {
  const { app, now } = parseOrThrow(OptionsSchema, options, "createSchedule options");
  const e = parseOrThrow(RuntimeScheduleSchema, entry, "schedule");
  const what = `schedule ${JSON.stringify(e.name)}`;
  if (app.schedules.has(e.name)) throw new InvalidInput(`${what} is defined in the app's code: pick another name`);
  const task = app.tasks.get(e.task);
  if (!task) throw new InvalidInput(`${what} names task ${JSON.stringify(e.task)}, which is not registered in this app`);
  const schedule = defineSchedule(e.name, task, { cron: e.cron, every: e.every, timezone: e.timezone }, e.args ?? {}, { catchUp: e.catchUp, overlap: e.overlap });
  const at = now ?? app.clock();
  const stored = await queryJson<StoredSchedule | null>(db, insertScheduleStatement(rowOf(schedule, e.tenant ?? null, e.paused ?? false, schedule.nextSlot(at)),
    timestamp(now ?? app.sqlClock?.() ?? null)));
  if (!stored) throw new DuplicateSchedule(e.name);
  return runtimeScheduleOf(stored);
}

/**
 * Changes a runtime schedule; fields not given keep their value. A new timing (or a resume) fires from the
 * first slot after `now`; other changes keep the pending slot. Resolves to the schedule as stored, or null when
 * no runtime schedule has this name. Invalid input throws InvalidInput and changes nothing.
 * @example await updateSchedule(db, "tenant-7.report", { cron: "0 10 * * *", args: { tenant: 7, format: "pdf" } }, { app });
 */
export async function updateSchedule(db: Db, name: string, change: ScheduleChange, options: ScheduleOptions): Promise<RuntimeSchedule | null> {
  const { app, now } = parseOrThrow(OptionsSchema, options, "updateSchedule options");
  parseOrThrow(NameSchema, name, "schedule name");
  const c = parseOrThrow(ScheduleChangeSchema, change, `change of schedule ${JSON.stringify(name)}`);
  const at = now ?? app.clock();
  return rewrite(db, name, timestamp(now ?? app.sqlClock?.() ?? null), (row) => {
    const taskName = c.task ?? row.task;
    const task = app.tasks.get(taskName);
    if (!task) throw new InvalidInput(`schedule ${JSON.stringify(name)} would name task ${JSON.stringify(taskName)}, which is not registered in this app`);
    const retimed = c.cron !== undefined || c.every !== undefined || c.timezone !== undefined;
    const timing = c.cron !== undefined || c.every !== undefined
      ? { cron: c.cron, every: c.every, timezone: c.timezone }
      : row.cron !== null ? { cron: row.cron, timezone: c.timezone ?? row.timezone ?? undefined } : { every: Number(row.everyMs), timezone: c.timezone };
    const policy = policyOf({ catchUp: row.catchUp, skip: row.skip });
    const schedule = defineSchedule(name, task, timing, "args" in c ? c.args : row.args,
      { catchUp: c.catchUp ?? policy.catchUp, overlap: c.overlap ?? policy.overlap });
    const paused = c.paused ?? row.paused;
    const resumed = row.paused && !paused;
    return rowOf(schedule, c.tenant === undefined ? row.tenant : c.tenant, paused,
      retimed || resumed ? schedule.nextSlot(at) : row.nextSlot === null ? null : new Date(row.nextSlot));
  });
}

/** Pauses a runtime schedule: its slots while paused never fire. False if no runtime schedule has this name. @example await pauseSchedule(db, "tenant-7.report"); */
export async function pauseSchedule(db: Db, name: string, options: PauseOptions = {}): Promise<boolean> {
  return (await setPaused(db, name, true, options)) !== null;
}

/** Undoes `pauseSchedule`: the schedule fires again from its first slot after `now`. False if no runtime schedule has this name. @example await resumeSchedule(db, "tenant-7.report"); */
export async function resumeSchedule(db: Db, name: string, options: PauseOptions = {}): Promise<boolean> {
  return (await setPaused(db, name, false, options)) !== null;
}

/** Deletes a runtime schedule (its jobs already enqueued stay); true if there was one. @example await deleteSchedule(db, "tenant-7.report"); */
export async function deleteSchedule(db: Db, name: string): Promise<boolean> {
  return queryJson<boolean>(db, deleteScheduleStatement(parseOrThrow(NameSchema, name, "schedule name")));
}

/**
 * One stored schedule by name: a runtime schedule as stored, "code" for a schedule defined in an app's code
 * (its row only records its last slot), null when there is none.
 * @example const s = await readSchedule(db, "tenant-7.report"); if (s && s !== "code") console.log(s.cron);
 */
export async function readSchedule(db: Db, name: string): Promise<RuntimeSchedule | "code" | null> {
  const row = await queryJson<StoredSchedule | null>(db, readScheduleStatement(parseOrThrow(NameSchema, name, "schedule name")));
  return !row ? null : row.runtime ? runtimeScheduleOf(row) : "code";
}

async function setPaused(db: Db, name: string, paused: boolean, options: PauseOptions): Promise<RuntimeSchedule | null> {
  parseOrThrow(NameSchema, name, "schedule name");
  const { app, now } = parseOrThrow(ClockSchema, options, paused ? "pauseSchedule options" : "resumeSchedule options");
  const at = now ?? app?.clock() ?? new Date();
  return rewrite(db, name, timestamp(now ?? app?.sqlClock?.() ?? null), (row) => {
    const schedule = storedSchedule(row);
    // A resume fires from the first slot after it: the slots while paused are not caught up.
    const next = !paused && row.paused ? schedule.nextSlot(at) : row.nextSlot === null ? null : new Date(row.nextSlot);
    return rowOf(schedule, row.tenant, paused, next);
  });
}

/**
 * Reads a runtime schedule, computes its new row and writes it if no one changed it meanwhile (the
 * revision), reading again otherwise: two statements, no transaction, so it works over neon-http too.
 */
async function rewrite(db: Db, name: string, now: ReturnType<typeof timestamp>, next: (row: StoredSchedule) => ScheduleRow): Promise<RuntimeSchedule | null> {
  for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
    const row = await queryJson<StoredSchedule | null>(db, readScheduleStatement(name));
    if (!row || !row.runtime) return null;
    const written = await queryJson<StoredSchedule | null>(db, updateScheduleStatement(next(row), row.revision, now));
    if (written) return runtimeScheduleOf(written);
  }
  throw new AkadzeError(`schedule ${JSON.stringify(name)} was changed by someone else ${UPDATE_ATTEMPTS} times while this change was made; try again`);
}

function rowOf(schedule: Schedule, tenant: string | null, paused: boolean, nextSlot: Date | null): ScheduleRow {
  const t = schedule.timing;
  return {
    name: schedule.name, task: schedule.task, tenant, args: schedule.args, paused, nextSlot,
    cron: "cron" in t ? t.cron : null, timezone: "cron" in t ? t.timezone ?? null : null, everyMs: "everyMs" in t ? t.everyMs : null,
    catchUp: schedule.policy.catchUp, skip: schedule.policy.skip,
  };
}

/** A stored row as the API returns it. */
export function runtimeScheduleOf(s: StoredSchedule): RuntimeSchedule {
  const date = (x: string | null) => (x === null ? null : new Date(x));
  return {
    name: s.name, task: s.task, tenant: s.tenant, args: s.args, cron: s.cron, timezone: s.timezone, everyMs: s.everyMs === null ? null : Number(s.everyMs),
    ...policyOf({ catchUp: s.catchUp, skip: s.skip }), paused: s.paused, lastSlot: date(s.lastSlot), nextSlot: date(s.nextSlot),
    createdAt: new Date(s.createdAt), updatedAt: new Date(s.updatedAt),
  };
}
