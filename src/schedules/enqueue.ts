import type { SQL } from "drizzle-orm";
import type { App } from "../app/app.js";
import { enqueueDueSlotsCtes, slotReport, type SlotOffer, type SlotReport } from "../sql/enqueue-due-slots.js";

/**
 * A schedule seen for the first time (no row yet) fires its latest slot only if that slot came due
 * less than this long ago: deploying an hourly schedule at 10:20 waits for 11:00 instead of running
 * the 10:00 slot late, while the cron-triggered invocation right at 10:00 still fires it.
 * @example console.log(`a new schedule fires a slot at most ${FIRST_SIGHT_GRACE_MS / 1000}s late`);
 */
export const FIRST_SIGHT_GRACE_MS = 60_000;

/** A schedule whose due slot a process saw is offered again after this long anyway (its `seen_at` is refreshed). */
export const SCHEDULE_RECHECK_MS = 60_000;

/**
 * Each schedule's candidate slots around `estimate` (the database's clock as this process guesses it): the
 * slot before the latest, the latest and the next two, so the statement finds the slot due on the database's
 * clock, and knows it is the latest, when the guess is off by up to a period (off by more, nothing fires
 * until the report teaches the offset). Only the latest slot ever fires: a long gap never fires a storm.
 */
export function slotOffers(app: App, estimate: Date): SlotOffer[] {
  const offers: SlotOffer[] = [];
  for (const schedule of app.schedules.values()) {
    const task = app.tasks.get(schedule.task);
    if (!task) continue;
    const latest = schedule.latestSlot(estimate);
    const next = schedule.nextSlot(estimate);
    const after = next && schedule.nextSlot(next);
    const slots = [latest && schedule.latestSlot(new Date(latest.getTime() - 1)), latest, next, after]
      .filter((slot): slot is Date => slot !== null);
    if (slots.length === 0) continue;
    offers.push({ name: schedule.name, task: task.name, slots, ends: after === null, queue: task.queue, args: schedule.args, priority: task.priority, maxAttempts: task.maxAttempts });
  }
  return offers;
}

/**
 * Which schedules one process's claims carry, on the database's clock. The host clock may be off: each claim
 * that carries schedules reports the statement's clock and the slot it found due, so the process keeps the
 * offset between its clock and the database's, offers slots around its estimate, and carries a schedule
 * again only once its next slot may be due there (or after SCHEDULE_RECHECK_MS, to refresh `seen_at`).
 * With a test clock the statement's clock is that clock, and the offset is 0.
 */
export class ScheduleSlots {
  /** The database's clock minus this process's, as the last report showed (0 until one did). */
  private offsetMs = 0;
  /** Per schedule: when (host clock) it was last carried, and its next slot after the one that was due then. */
  private readonly carried = new Map<string, { at: number; next: number | null }>();

  constructor(private readonly app: App) {}

  /**
   * What a claim sent now carries: its extra CTEs and report entries (none if no schedule needs a look), and
   * `answered`, to call with the report of the claim once it succeeded.
   */
  forClaim(hostNow: Date, now: SQL): { extra: SQL[]; report: Record<string, SQL>; answered: (report: SlotReport | undefined) => void } {
    const at = hostNow.getTime();
    const estimate = at + this.offsetMs;
    const offers = slotOffers(this.app, new Date(estimate)).filter((o) => {
      const seen = this.carried.get(o.name);
      // A clock moved back (by a test) has nothing to go by either.
      return !seen || at < seen.at || at - seen.at >= SCHEDULE_RECHECK_MS || (seen.next !== null && estimate >= seen.next);
    });
    if (offers.length === 0) return { extra: [], report: {}, answered: () => {} };
    return {
      extra: enqueueDueSlotsCtes(offers, now, FIRST_SIGHT_GRACE_MS),
      report: slotReport(now),
      answered: (report) => {
        if (!report) return;
        this.offsetMs = Number(report.now) - at;
        for (const o of offers) {
          const due = report.due?.[o.name];
          // None of the candidates was due yet (the first guess was far off): offer again with the offset learned.
          if (due === undefined) this.carried.delete(o.name);
          else this.carried.set(o.name, { at, next: this.app.schedules.get(o.name)?.nextSlot(new Date(Number(due)))?.getTime() ?? null });
        }
      },
    };
  }
}
