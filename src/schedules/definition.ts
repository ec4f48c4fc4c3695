import { Cron } from "croner";
import type { Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { assertStorableJson, NameSchema, parseOrThrow, ScheduleEntrySchema, ScheduleTimingSchema } from "../core/validate.js";
import type { TaskDefinition } from "../app/task.js";

/**
 * When a schedule fires: a cron expression (5 fields, or 6 with seconds first) in an IANA time zone
 * (default UTC), or a fixed period `every`, counted from the Unix epoch ("5m" fires at :00, :05, ...).
 * @example const hourly: ScheduleTiming = { cron: "0 * * * *", timezone: "Europe/Berlin" };
 */
export type ScheduleTiming =
  | { cron: string; timezone?: string; every?: never }
  | { every: Duration; cron?: never; timezone?: never };

/**
 * A schedule for an existing task, as `app.addSchedules` takes it.
 * @example const nightly: ScheduleEntry = { name: "nightly", task: "mail.send", cron: "0 3 * * *", args: { userId: 1 } };
 */
export type ScheduleEntry = ScheduleTiming & {
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

/**
 * Validates a schedule against the task it enqueues; throws InvalidInput (bad cron expression,
 * unknown time zone, zero or negative `every`, args the task rejects) and has no side effects.
 */
export function defineSchedule(name: string, task: TaskDefinition, timingInput: unknown, args: unknown = {}): Schedule {
  parseOrThrow(NameSchema, name, "schedule name");
  const what = `schedule ${JSON.stringify(name)}`;
  const timing = parseOrThrow(ScheduleTimingSchema, timingInput, what);
  parseOrThrow(task.schema, args, `args of ${what} for task ${task.name}`);
  assertStorableJson(args, "args", what);
  if (timing.every !== undefined) return new Schedule(name, task.name, args, { everyMs: timing.every });
  let schedule: Schedule;
  try {
    schedule = new Schedule(name, task.name, args, { cron: timing.cron!, timezone: timing.timezone });
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
    const { cron, every, timezone } = entry;
    return defineSchedule(entry.name, task, { cron, every, timezone }, entry.args ?? {});
  });
}
