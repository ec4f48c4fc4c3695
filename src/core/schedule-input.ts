/**
 * What a schedule's definition may say (`app.periodic`, `addSchedules`, `createSchedule`, `updateSchedule`): its
 * timing, its catch-up and overlap policies, and the entry shapes, checked with valibot as every public input is.
 */
import * as v from "valibot";
import { tryParseDuration } from "./duration.js";
import { MAX_SPAN_MS, NameSchema } from "./validate.js";

/** A cron expression of 5 fields, or 6 with seconds first (croner would also take a 7th, a year, which the docs do not promise). */
const cronFields = (cron: string) => cron.trim().split(/\s+/).length;
const Cron = v.pipe(v.string("cron must be a string"), v.check((c) => [5, 6].includes(cronFields(c)), (issue) =>
  `bad cron expression ${JSON.stringify(issue.input)}: use 5 fields (minute hour day month weekday), or 6 with seconds first; it has ${cronFields(issue.input as string)}`));
const EVERY = 'every must be a positive Duration such as "30s" or "5m", at most 100 years';
const Every = v.pipe(v.union([v.number(), v.string()], EVERY), v.check((x) => {
  const ms = tryParseDuration(x);
  return ms !== undefined && ms > 0 && ms <= MAX_SPAN_MS;
}, (issue) => `${EVERY}; got ${JSON.stringify(issue.input)}`), v.transform((x) => tryParseDuration(x)!));
const TimeZone = v.pipe(v.string("timezone must be a string"), v.check((zone) => {
  try { new Intl.DateTimeFormat("en-US", { timeZone: zone }); return true; } catch { return false; }
}, (issue) => `unknown time zone ${JSON.stringify(issue.input)} (use an IANA name such as "Europe/Berlin")`));

/** When a schedule fires: `cron` (with an optional `timezone`) or `every`. */
export const ScheduleTimingSchema = v.pipe(
  v.object({
    cron: v.optional(Cron),
    every: v.optional(Every),
    timezone: v.optional(TimeZone),
  }),
  v.check((t) => (t.cron === undefined) !== (t.every === undefined), "give either cron or every, not both or neither"),
  v.check((t) => t.timezone === undefined || t.cron !== undefined, "timezone applies to cron schedules only"),
);

/** The most missed slots `catchUp: { all: n }` enqueues after a gap. @example app.periodic("sync", { every: "1m", catchUp: { all: MAX_CATCH_UP } }, handler); */
export const MAX_CATCH_UP = 100;
const CATCH_UP = `catchUp must be "latest" or { all: n } with n from 1 to ${MAX_CATCH_UP}`;
const CatchUp = v.union([
  v.pipe(v.literal("latest"), v.transform(() => 1)),
  v.pipe(v.strictObject({ all: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_CATCH_UP)) }), v.transform((c) => c.all)),
], (issue) => `${CATCH_UP}; got ${JSON.stringify(issue.input)}`);
const Overlap = v.picklist(["allow", "skip"], (issue) => `overlap must be "allow" or "skip"; got ${JSON.stringify(issue.input)}`);

/**
 * A schedule's catch-up and overlap policies, as numbers the statement uses: `catchUp` is how many missed
 * slots a gap enqueues (1: the latest), `skip` whether a slot is dropped while the previous one's job is active.
 */
export const SchedulePolicySchema = v.pipe(
  v.object({ catchUp: v.optional(CatchUp, "latest"), overlap: v.optional(Overlap, "allow") }),
  v.check((p) => p.catchUp === 1 || p.overlap === "allow",
    'catchUp { all } enqueues missed slots side by side, which overlap "skip" forbids: choose one'),
  v.transform((p) => ({ catchUp: p.catchUp as number, skip: p.overlap === "skip" })),
);

/** An `addSchedules` entry before its timing and args are checked against its task. */
export const ScheduleEntrySchema = v.strictObject({
  name: NameSchema,
  task: NameSchema,
  cron: v.optional(v.unknown()),
  every: v.optional(v.unknown()),
  timezone: v.optional(v.unknown()),
  args: v.optional(v.unknown()),
  catchUp: v.optional(v.unknown()),
  overlap: v.optional(v.unknown()),
});

/** A `createSchedule` entry: an `addSchedules` entry with an optional tenant and a paused start. */
export const RuntimeScheduleSchema = v.strictObject({
  ...ScheduleEntrySchema.entries,
  tenant: v.optional(v.nullable(NameSchema)),
  paused: v.optional(v.boolean("paused must be true or false")),
});

/** `updateSchedule`'s change: any field of a runtime schedule but its name; `cron` and `every` replace each other. */
export const ScheduleChangeSchema = v.strictObject({
  ...v.omit(RuntimeScheduleSchema, ["name"]).entries,
  task: v.optional(NameSchema),
});
