import type { App } from "../app/app.js";
import type { DueSlot } from "../sql/enqueue-due-slots.js";

/**
 * A schedule seen for the first time (no row yet) fires its latest slot only if that slot came due
 * less than this long ago: deploying an hourly schedule at 10:20 waits for 11:00 instead of running
 * the 10:00 slot late, while the cron-triggered invocation right at 10:00 still fires it.
 * @example console.log(`a new schedule fires a slot at most ${FIRST_SIGHT_GRACE_MS / 1000}s late`);
 */
export const FIRST_SIGHT_GRACE_MS = 60_000;

/** Each schedule's latest slot at or before `now`: only the latest, so a long gap never fires a storm. */
export function dueSlots(app: App, now: Date): DueSlot[] {
  const due: DueSlot[] = [];
  for (const schedule of app.schedules.values()) {
    const slot = schedule.latestSlot(now);
    const task = app.tasks.get(schedule.task);
    if (!slot || !task) continue;
    due.push({
      name: schedule.name, task: task.name, slot, fireIfNew: now.getTime() - slot.getTime() < FIRST_SIGHT_GRACE_MS,
      queue: task.queue, args: schedule.args, priority: task.priority, maxAttempts: task.maxAttempts,
    });
  }
  return due;
}
