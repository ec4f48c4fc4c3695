import { Cron } from "croner";
import * as v from "valibot";
import { tryParseDuration, type Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { isJsonValue } from "../core/json.js";
import { parseOrThrow } from "../app/options.js";
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

const Name = (what: string) => v.pipe(v.string(`${what} must be a string`), v.minLength(1, `${what} must not be empty`), v.maxLength(200, `${what} is too long`));

const TimingSchema = v.pipe(
  v.object({
    cron: v.optional(v.string("cron must be a string")),
    every: v.optional(v.union([v.number(), v.string()], "every must be a Duration such as \"5m\"")),
    timezone: v.optional(v.string("timezone must be a string")),
  }),
  v.check((t) => (t.cron === undefined) !== (t.every === undefined), "give either cron or every, not both or neither"),
  v.check((t) => t.timezone === undefined || t.cron !== undefined, "timezone applies to cron schedules only"),
);

const EntrySchema = v.strictObject({
  name: Name("a schedule name"),
  task: Name("a schedule's task"),
  cron: v.optional(v.unknown()),
  every: v.optional(v.unknown()),
  timezone: v.optional(v.unknown()),
  args: v.optional(v.unknown()),
});

/**
 * Validates a schedule against the task it enqueues; throws InvalidInput (bad cron expression,
 * unknown time zone, zero or negative `every`, args the task rejects) and has no side effects.
 */
export function defineSchedule(name: string, task: TaskDefinition, timingInput: unknown, args: unknown = {}): Schedule {
  const what = `schedule ${JSON.stringify(name)}`;
  const timing = parseOrThrow(TimingSchema, timingInput, what);
  parseOrThrow(task.schema, args, `args of ${what} for task ${task.name}`);
  if (!isJsonValue(args)) throw new InvalidInput(`Invalid args of ${what}: args must be JSON`);
  if (timing.every !== undefined) {
    const everyMs = tryParseDuration(timing.every);
    if (everyMs === undefined || everyMs <= 0) {
      throw new InvalidInput(`Invalid ${what}: every must be a positive Duration such as "30s" or "5m"; got ${JSON.stringify(timing.every)}`);
    }
    return new Schedule(name, task.name, args, { everyMs });
  }
  if (timing.timezone !== undefined) checkTimeZone(timing.timezone, what);
  try {
    return new Schedule(name, task.name, args, { cron: timing.cron!, timezone: timing.timezone });
  } catch (error) {
    throw new InvalidInput(`Invalid ${what}: bad cron expression ${JSON.stringify(timing.cron)} (${(error as Error).message})`, { cause: error });
  }
}

/** Validates `addSchedules` entries against the app's tasks, all before any is registered. */
export function defineSchedules(entries: unknown, tasks: ReadonlyMap<string, TaskDefinition>, taken: ReadonlySet<string>): Schedule[] {
  if (!Array.isArray(entries)) throw new InvalidInput("addSchedules takes an array of schedules");
  const names = new Set(taken);
  return entries.map((input, i) => {
    const entry = parseOrThrow(EntrySchema, input, `schedule #${i + 1}`);
    if (names.has(entry.name)) throw new InvalidInput(`schedule ${JSON.stringify(entry.name)} is already defined`);
    names.add(entry.name);
    const task = tasks.get(entry.task);
    if (!task) throw new InvalidInput(`schedule ${JSON.stringify(entry.name)} names task ${JSON.stringify(entry.task)}, which is not registered`);
    const { cron, every, timezone } = entry;
    return defineSchedule(entry.name, task, { cron, every, timezone }, entry.args ?? {});
  });
}

function checkTimeZone(timezone: string, what: string): void {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch (error) {
    throw new InvalidInput(`Invalid ${what}: unknown time zone ${JSON.stringify(timezone)} (use an IANA name such as "Europe/Berlin")`, { cause: error });
  }
}
