import { Cron } from "croner";
import type { Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { assertStorableJson, NameSchema, parseOrThrow } from "../core/validate.js";
import { ScheduleEntrySchema, SchedulePolicySchema, ScheduleTimingSchema } from "../core/schedule-input.js";
import type { TaskDefinition } from "./task.js";

/**
 * When a schedule fires: a cron expression (5 fields, or 6 with seconds first) in an IANA time zone
 * (default UTC), or a fixed period `every`, counted from the Unix epoch ("5m" fires at :00, :05, ...).
 * @example const hourly: ScheduleTiming = { cron: "0 * * * *", timezone: "Europe/Berlin" };
 */
export type ScheduleTiming =
  | { cron: string; timezone?: string; every?: never }
  | { every: Duration; cron?: never; timezone?: never };

/**
 * What a schedule does after a gap and while its previous job is still active. `catchUp`: `"latest"` (the
 * default) enqueues only the latest missed slot, `{ all: n }` the latest n (at most MAX_CATCH_UP, 100).
 * `overlap`: `"allow"` (the default) enqueues every slot, `"skip"` drops a slot while the job of the
 * previous one is queued or running (it cannot be combined with `{ all: n }`).
 * @example const policy: SchedulePolicy = { catchUp: { all: 5 } };
 */
export interface SchedulePolicy {
  catchUp?: "latest" | { all: number };
  overlap?: "allow" | "skip";
}

/** A policy as the statement uses it: how many missed slots fire, and whether an active previous job drops a slot. */
export interface SlotPolicy { catchUp: number; skip: boolean }

/** The default: only the latest missed slot, overlaps allowed. */
export const DEFAULT_SLOT_POLICY: SlotPolicy = { catchUp: 1, skip: false };

/** A stored policy as the API spells it. @example policyOf({ catchUp: 5, skip: false }) // { catchUp: { all: 5 }, overlap: "allow" } */
export function policyOf(p: SlotPolicy): Required<SchedulePolicy> {
  return { catchUp: p.catchUp === 1 ? "latest" : { all: p.catchUp }, overlap: p.skip ? "skip" : "allow" };
}

/**
 * A schedule for an existing task, as `app.addSchedules` takes it.
 * @example const nightly: ScheduleEntry = { name: "nightly", task: "mail.send", cron: "0 3 * * *", args: { userId: 1 } };
 */
export type ScheduleEntry = ScheduleTiming & SchedulePolicy & {
  /** Unique among the app's schedules; the key its last enqueued slot is stored under. */
  name: string;
  /** A task registered in the same app. */
  task: string;
  /** The args of every job it enqueues, checked against the task's schema now. Default `{}`. */
  args?: unknown;
};

/** A validated schedule: which task, with which args, at which instants. */
export class Schedule {
  private readonly cronJob: Cron | null;

  constructor(
    readonly name: string,
    readonly task: string,
    readonly args: unknown,
    readonly timing: { cron: string; timezone: string | undefined } | { everyMs: number },
    readonly policy: SlotPolicy = DEFAULT_SLOT_POLICY,
  ) {
    // Without a time zone, cron runs in UTC (as Cloudflare and Vercel cron triggers do), not the host's zone.
    this.cronJob = "cron" in timing ? new Cron(timing.cron, { timezone: timing.timezone ?? "UTC", paused: true }) : null;
  }

  /** The latest slot at or before `at`, or null if it has none. */
  latestSlot(at: Date): Date | null {
    if (this.cronJob) return this.cronJob.previousRuns(1, new Date(at.getTime() + 1))[0] ?? null;
    const every = (this.timing as { everyMs: number }).everyMs;
    return new Date(Math.floor(at.getTime() / every) * every);
  }

  /** The latest `n` slots at or before `at`, latest first (fewer if the schedule has fewer). */
  latestSlots(at: Date, n: number): Date[] {
    if (this.cronJob) return this.cronJob.previousRuns(n, new Date(at.getTime() + 1));
    const latest = this.latestSlot(at)!.getTime();
    const every = (this.timing as { everyMs: number }).everyMs;
    return Array.from({ length: n }, (_, i) => new Date(latest - i * every)).filter((d) => d.getTime() >= 0);
  }

  /** The first slot strictly after `at`, or null if there is none. */
  nextSlot(at: Date): Date | null {
    if (this.cronJob) return this.cronJob.nextRun(at);
    const every = (this.timing as { everyMs: number }).everyMs;
    return new Date((Math.floor(at.getTime() / every) + 1) * every);
  }

  /** A short human description, e.g. `cron "0 * * * *" Europe/Berlin` or `every 300000 ms`. */
  describe(): string {
    if ("cron" in this.timing) return `cron ${JSON.stringify(this.timing.cron)}${this.timing.timezone ? ` ${this.timing.timezone}` : ""}`;
    return `every ${this.timing.everyMs} ms`;
  }
}

/** A schedule's definition as its row stores it (a runtime schedule's). */
export interface StoredTiming {
  name: string; task: string; args: unknown; cron: string | null; timezone: string | null; everyMs: number | string | null; catchUp: number; skip: boolean;
}

/** A runtime schedule's stored definition as a Schedule (it was validated when stored). */
export function storedSchedule(row: StoredTiming): Schedule {
  const timing = row.cron !== null ? { cron: row.cron, timezone: row.timezone ?? undefined } : { everyMs: Number(row.everyMs) };
  return new Schedule(row.name, row.task, row.args ?? {}, timing, { catchUp: row.catchUp, skip: row.skip });
}

/**
 * Validates a schedule against the task it enqueues; throws InvalidInput (bad cron expression,
 * unknown time zone, zero or negative `every`, args the task rejects, a bad policy) and has no side effects.
 */
export function defineSchedule(name: string, task: TaskDefinition, timingInput: unknown, args: unknown = {}, policyInput: unknown = {}): Schedule {
  parseOrThrow(NameSchema, name, "schedule name");
  const what = `schedule ${JSON.stringify(name)}`;
  const timing = parseOrThrow(ScheduleTimingSchema, timingInput, what);
  const policy = parseOrThrow(SchedulePolicySchema, policyInput, what);
  parseOrThrow(task.schema, args, `args of ${what} for task ${task.name}`);
  assertStorableJson(args, "args", what);
  if (timing.every !== undefined) return new Schedule(name, task.name, args, { everyMs: timing.every }, policy);
  let schedule: Schedule;
  try {
    schedule = new Schedule(name, task.name, args, { cron: timing.cron!, timezone: timing.timezone }, policy);
  } catch (error) {
    throw new InvalidInput(`Invalid ${what}: bad cron expression ${JSON.stringify(timing.cron)} (${(error as Error).message})`, { cause: error });
  }
  // A well-formed expression may name a day that never comes (`0 0 31 2 *`): such a schedule never fires.
  if (schedule.nextSlot(new Date()) === null) {
    throw new InvalidInput(`Invalid ${what}: cron expression ${JSON.stringify(timing.cron)} never fires`);
  }
  return schedule;
}

/** Validates `addSchedules` entries against the app's tasks, all before any is registered. */
export function defineSchedules(entries: unknown, tasks: ReadonlyMap<string, TaskDefinition>, taken: ReadonlySet<string>): Schedule[] {
  if (!Array.isArray(entries)) throw new InvalidInput("addSchedules takes an array of schedules");
  const names = new Set(taken);
  return entries.map((input, i) => {
    const entry = parseOrThrow(ScheduleEntrySchema, input, `schedule #${i + 1}`);
    if (names.has(entry.name)) throw new InvalidInput(`schedule ${JSON.stringify(entry.name)} is already defined`);
    names.add(entry.name);
    const task = tasks.get(entry.task);
    if (!task) throw new InvalidInput(`schedule ${JSON.stringify(entry.name)} names task ${JSON.stringify(entry.task)}, which is not registered`);
    const { cron, every, timezone, catchUp, overlap } = entry;
    return defineSchedule(entry.name, task, { cron, every, timezone }, entry.args ?? {}, { catchUp, overlap });
  });
}
