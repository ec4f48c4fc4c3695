import type { App } from "../app/app.js";
import type { StoredDefinition } from "../sql/schedules/due-runtime-schedules.js";
import { storedSchedule, type Schedule } from "../app/schedule.js";

/** A schedule as a process offers it: defined in code (revision null) or learned from its row (its revision). */
export interface Offerable { schedule: Schedule; revision: number | null }

/**
 * The runtime schedules one process learned from its claims' reports, by name: what it offers besides the
 * code's, until a report says the row changed, was paused or deleted (`forget`).
 */
export class LearnedSchedules {
  private readonly byName = new Map<string, Offerable>();

  constructor(private readonly app: App) {}

  values(): IterableIterator<Offerable> {
    return this.byName.values();
  }

  get(name: string): Schedule | undefined {
    return this.byName.get(name)?.schedule;
  }

  /**
   * Keeps the definitions a claim brought back; returns the names that are new or changed (those this
   * process has not offered yet). A name the app's code schedules stays the code's: a runtime row of
   * that name never fires here. A definition this croner cannot read is left out.
   */
  learn(definitions: StoredDefinition[]): string[] {
    const learned: string[] = [];
    for (const d of definitions) {
      if (this.app.schedules.has(d.name) || this.byName.get(d.name)?.revision === d.revision) continue;
      let schedule: Schedule;
      try {
        schedule = storedSchedule(d);
      } catch {
        continue;
      }
      this.byName.set(d.name, { schedule, revision: d.revision });
      learned.push(d.name);
    }
    return learned;
  }

  forget(name: string): void {
    this.byName.delete(name);
  }
}
