import type { SQL } from "drizzle-orm";
import type { App } from "../app/app.js";
import { enqueueDueSlotsCtes, scheduleSlotReport, type ScheduleSlotOffer, type ScheduleSlotReport } from "../sql/schedules/enqueue-due-slots.js";
import { dueRuntimeSchedulesCte, runtimeAnyReport, runtimeDueReport, type StoredDefinition } from "../sql/schedules/due-runtime-schedules.js";
import { LearnedSchedules, type Offerable } from "./learned.js";

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
 * A schedule's candidate slots around `estimate` (the database's clock as this process guesses it): the
 * `catchUp` latest, the one before them and the next two, so the statement finds the slots due on the
 * database's clock, and knows the latest, when the guess is off by up to a period (off by more, nothing fires
 * until the report teaches the offset). A long gap fires at most `catchUp` slots, never a storm.
 */
function slotOffer(app: App, { schedule, revision }: Offerable, estimate: Date): ScheduleSlotOffer | null {
  const task = app.tasks.get(schedule.task);
  if (!task) return null;
  const latest = schedule.latestSlots(estimate, schedule.policy.catchUp + 1);
  const next = schedule.nextSlot(estimate);
  const after = next && schedule.nextSlot(next);
  const slots = [...latest, next, after].filter((slot): slot is Date => slot !== null);
  if (slots.length === 0) return null;
  return {
    name: schedule.name, task: task.name, slots, ends: after === null, queue: task.queue, args: schedule.args, priority: task.priority,
    maxAttempts: task.maxAttempts, catchUp: schedule.policy.catchUp, skip: schedule.policy.skip, revision,
  };
}

/**
 * Which schedules one process's claims carry, on the database's clock. The host clock may be off: each claim
 * that carries schedules reports the statement's clock and the slot it found due, so the process keeps the
 * offset between its clock and the database's, offers slots around its estimate, and carries a schedule
 * again only once its next slot may be due there (or after SCHEDULE_RECHECK_MS, to refresh `seen_at`).
 * With a test clock the statement's clock is that clock, and the offset is 0.
 *
 * Runtime schedules (`createSchedule`) live in the database: a claim asks which of them have a slot due
 * (an index probe), and brings back their definitions; the next claim offers their slots as it does the
 * code's, and the process keeps the definitions to offer their later slots at once. A definition whose row
 * changed, was paused or deleted fires nothing (its revision no longer matches) and is forgotten. The probe
 * rides while any runtime schedule is active (every claim reports whether one is; before any claim did, on
 * every claim but a draining engine's); the claim that first reports one asks for the next at once, which probes.
 */
export class ScheduleSlots {
  /** The database's clock minus this process's, as the last report showed (0 until one did). */
  private offsetMs = 0;
  /** Per schedule: when (host clock) it was last carried, and its next slot after the one that was due then. */
  private readonly carried = new Map<string, { at: number; next: number | null }>();
  /** Runtime schedules learned from claims. */
  private readonly learned: LearnedSchedules;

  /**
   * `memory`: where whether a runtime schedule is active is kept between claims (the engine passes its process's
   * memory, runtime/process-memory.ts: it describes the database); null until a claim told. Not known, a claim
   * probes unless it is a draining engine's, which learns from the answer and asks for the next at once.
   */
  constructor(private readonly app: App, private readonly memory: { runtimeSchedules: boolean | null } = { runtimeSchedules: null }) {
    this.learned = new LearnedSchedules(app);
  }

  /**
   * What a claim sent now carries (the schedules rider, runtime/riders.ts): its CTEs and report entries, and `answered`, to call with the report
   * of the claim once it succeeded; it returns true when the claim brought back runtime schedules with a slot
   * due (the caller claims again to fire them).
   */
  forClaim(hostNow: Date, now: SQL, drains = false): {
    extra: SQL[]; report: Record<string, SQL>;
    answered: (report: ScheduleSlotReport | undefined, runtimeDue?: StoredDefinition[] | null, runtimeAny?: boolean) => boolean;
  } {
    const at = hostNow.getTime();
    const estimate = at + this.offsetMs;
    const offerables: Offerable[] = [...[...this.app.schedules.values()].map((schedule) => ({ schedule, revision: null })), ...this.learned.values()];
    const offers = offerables.filter(({ schedule }) => {
      const seen = this.carried.get(schedule.name);
      // A clock moved back (by a test) has nothing to go by either.
      return !seen || at < seen.at || at - seen.at >= SCHEDULE_RECHECK_MS || (seen.next !== null && estimate >= seen.next);
    }).map((o) => slotOffer(this.app, o, new Date(estimate))).filter((o): o is ScheduleSlotOffer => o !== null);
    const offeredRuntime = offers.filter((o) => o.revision !== null).map((o) => ({ name: o.name, revision: o.revision! }));
    const probed = this.memory.runtimeSchedules ?? !drains;
    const probe = probed ? [dueRuntimeSchedulesCte(now, [...this.app.tasks.keys()], offeredRuntime)] : [];
    const extra = offers.length === 0 ? probe : [...enqueueDueSlotsCtes(offers, now, FIRST_SIGHT_GRACE_MS), ...probe];
    return {
      extra,
      report: { ...(offers.length === 0 ? {} : scheduleSlotReport(now)), ...(probed ? runtimeDueReport() : {}), ...runtimeAnyReport() },
      answered: (report, runtimeDue, runtimeAny) => {
        // (Not told: as if one were active.)
        this.memory.runtimeSchedules = runtimeAny !== false;
        if (report) {
          this.offsetMs = Number(report.now) - at;
          for (const o of offers) {
            const due = report.due?.[o.name];
            const schedule = o.revision === null ? this.app.schedules.get(o.name) : this.learned.get(o.name);
            // None of the candidates was due yet (the first guess was far off): offer again with the offset learned.
            if (due === undefined) this.carried.delete(o.name);
            else this.carried.set(o.name, { at, next: schedule?.nextSlot(new Date(Number(due)))?.getTime() ?? null });
          }
          for (const name of report.gone ?? []) {
            this.learned.forget(name);
            this.carried.delete(name);
          }
        }
        // Offered at once by the next claim, whatever was carried under the name before.
        const learned = this.learned.learn(runtimeDue ?? []);
        for (const name of learned) this.carried.delete(name);
        return learned.length > 0 || (!probed && this.memory.runtimeSchedules);
      },
    };
  }
}
