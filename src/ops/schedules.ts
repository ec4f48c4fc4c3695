import type { App } from "../app/app.js";
import { queryJson, type Db } from "../db/query.js";
import { listSchedulesStatement, type StoredSchedule } from "../sql/list-schedules.js";

/** A schedule as `schedules list` shows it. @example const stale = (await listSchedules(db, { app })).filter((s: ScheduleInfo) => s.defined === false); */
export interface ScheduleInfo {
  name: string;
  task: string;
  /** How it fires, when the app defines it: `cron "0 * * * *" Europe/Berlin` or `every 300000 ms`. */
  schedule: string | null;
  /** The last slot enqueued (or recorded on first sight); null if no invocation has seen it yet. */
  lastSlot: Date | null;
  /** The next slot after `now`, when the app defines it. */
  nextSlot: Date | null;
  /** When an invocation last saw the definition (refreshed about once a minute). */
  seenAt: Date | null;
  /**
   * With an app: false for a stored schedule the app no longer defines (stale: it stopped firing);
   * true otherwise. Null without an app.
   */
  defined: boolean | null;
}

/**
 * Stored schedules with their last slot; given the app, also the ones it defines that have not run
 * yet, their next slot, and which stored ones are stale.
 * @example for (const s of await listSchedules(db, { app })) console.log(s.name, s.lastSlot, s.nextSlot);
 */
export async function listSchedules(db: Db, options: { app?: App; now?: Date } = {}): Promise<ScheduleInfo[]> {
  const { app } = options;
  const now = options.now ?? app?.clock() ?? new Date();
  const stored = (await queryJson<StoredSchedule[]>(db, listSchedulesStatement())) ?? [];
  const byName = new Map(stored.map((s) => [s.name, s]));
  const names = new Set([...byName.keys(), ...(app?.schedules.keys() ?? [])]);
  return [...names].sort().map((name) => {
    const row = byName.get(name);
    const schedule = app?.schedules.get(name);
    return {
      name,
      task: schedule?.task ?? row!.task,
      schedule: schedule?.describe() ?? null,
      lastSlot: row?.lastSlot ? new Date(row.lastSlot) : null,
      nextSlot: schedule?.nextSlot(now) ?? null,
      seenAt: row ? new Date(row.seenAt) : null,
      defined: app ? schedule !== undefined : null,
    };
  });
}
