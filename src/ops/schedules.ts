import * as v from "valibot";
import type { App } from "../app/app.js";
import { NameSchema, parseOrThrow } from "../core/validate.js";
import { queryJson, type Db } from "../db/query.js";
import { policyOf, storedSchedule, type SchedulePolicy } from "../app/schedule.js";
import { listSchedulesStatement, type StoredSchedule } from "../sql/schedules/list-schedules.js";

/** A schedule as `schedules list` shows it. @example const stale = (await listSchedules(db, { app })).filter((s: ScheduleInfo) => s.defined === false); */
export interface ScheduleInfo extends Required<SchedulePolicy> {
  name: string;
  task: string;
  /** Made at runtime (`createSchedule`: stored in the database) or defined in the app's code. */
  runtime: boolean;
  /** A runtime schedule's tenant (null: none, and always for one in code). */
  tenant: string | null;
  /** How it fires, when known: `cron "0 * * * *" Europe/Berlin` or `every 300000 ms`. */
  schedule: string | null;
  /** The args of the jobs it enqueues, when known. */
  args: unknown;
  /** A paused runtime schedule fires nothing until resumed. */
  paused: boolean;
  /** The last slot enqueued (or recorded on first sight); null if no invocation has seen it yet. */
  lastSlot: Date | null;
  /** The next slot after `now`, when the app defines it; a runtime schedule's earliest slot that may fire. */
  nextSlot: Date | null;
  /** When an invocation last saw the definition (refreshed about once a minute). */
  seenAt: Date | null;
  /**
   * With an app: false for a stored schedule the app no longer defines in code (stale: it stopped firing);
   * true otherwise (a runtime schedule defines itself). Null without an app.
   */
  defined: boolean | null;
}

const ListOptionsSchema = v.strictObject({
  app: v.optional(v.custom<App>((a) => (a as App | null)?.tasks instanceof Map, "app must be what createApp returns")),
  now: v.optional(v.date("now must be a valid Date")),
  tenant: v.optional(NameSchema),
});

/**
 * Stored schedules with their last slot, runtime ones with their definitions; given the app, also the ones
 * its code defines that have not run yet, their next slot, and which stored ones are stale. With `tenant`,
 * only that tenant's runtime schedules.
 * @example for (const s of await listSchedules(db, { app })) console.log(s.name, s.lastSlot, s.nextSlot);
 */
export async function listSchedules(db: Db, options: { app?: App; now?: Date; tenant?: string } = {}): Promise<ScheduleInfo[]> {
  const { app, tenant, ...rest } = parseOrThrow(ListOptionsSchema, options, "listSchedules options");
  const now = rest.now ?? app?.clock() ?? new Date();
  const stored = (await queryJson<StoredSchedule[]>(db, listSchedulesStatement(tenant))) ?? [];
  const byName = new Map(stored.map((s) => [s.name, s]));
  const names = new Set([...byName.keys(), ...(tenant === undefined ? app?.schedules.keys() ?? [] : [])]);
  return [...names].sort().map((name) => {
    const row = byName.get(name);
    const date = (x: string | null | undefined) => (x ? new Date(x) : null);
    if (row?.runtime) {
      return {
        name, task: row.task, runtime: true, tenant: row.tenant, schedule: storedSchedule(row).describe(), args: row.args,
        ...policyOf({ catchUp: row.catchUp, skip: row.skip }), paused: row.paused, lastSlot: date(row.lastSlot), nextSlot: date(row.nextSlot),
        seenAt: date(row.seenAt), defined: app ? true : null,
      };
    }
    const schedule = app?.schedules.get(name);
    return {
      name, task: schedule?.task ?? row!.task, runtime: false, tenant: null, schedule: schedule?.describe() ?? null, args: schedule?.args ?? null,
      ...policyOf(schedule?.policy ?? { catchUp: row!.catchUp, skip: row!.skip }), paused: false,
      lastSlot: date(row?.lastSlot), nextSlot: schedule?.nextSlot(now) ?? null, seenAt: date(row?.seenAt), defined: app ? schedule !== undefined : null,
    };
  });
}
