import { JobAbort } from "./signal.js";

/** What becomes of a job a claim handed to an engine that may know it already (`HeldJobs.admit`). */
export type Admission = "new" | "replaces-waiting" | "skip";

/**
 * A job's life in one engine outside its local queue: held (leased to the engine, with the controller its
 * body gets), its body running, its outcome on its way to the database; and what that means when a claim of
 * the same engine hands the job back after its lease lapsed (a body held the event loop, a heartbeat
 * stalled) and a claim recovered it. The engine never runs one job twice beside itself.
 */
export class HeldJobs {
  /** Every job held (waiting locally or running), with the controller its body gets. */
  readonly controllers = new Map<number, JobAbort>();
  private readonly bodies = new Set<number>();
  /** Outcomes handed to the settler and not yet answered, by job id: how many. */
  private readonly settling = new Map<number, number>();
  /**
   * Jobs that ended here for good (a settle recorded a final outcome, or they completed on their own) while a
   * claim was on its way. That claim may hand one back: it took the row first, then the settle finished the
   * row under the same owner. Such a copy is stale. Cleared at each claim's answer (one is on its way at a time).
   */
  private readonly endedWhileClaiming = new Set<number>();

  /**
   * A claim handed `id` over. `new`: hold it (a fresh controller) and queue it. `replaces-waiting`: it waits in
   * the local queue already: the caller drops that copy, and this one is held and queued instead. `skip`: its
   * body runs, its outcome is on its way (both now settle under the renewed lease), or the copy is stale.
   */
  admit(id: number): Admission {
    if (this.endedWhileClaiming.has(id) || this.bodies.has(id) || this.settling.has(id)) return "skip";
    const waiting = this.controllers.has(id);
    this.controllers.set(id, new JobAbort());
    return waiting ? "replaces-waiting" : "new";
  }

  /** A claim was answered (or failed): the jobs that ended while it was on its way are no longer in question. */
  claimAnswered(): void {
    this.endedWhileClaiming.clear();
  }

  /** A job ended for good; `claiming`: while a claim was on its way. */
  endedForGood(id: number, claiming: boolean): void {
    if (claiming) this.endedWhileClaiming.add(id);
  }

  controllerOf(id: number): JobAbort | undefined {
    return this.controllers.get(id);
  }

  /** No longer held: released, denied its start, or its body ended. */
  drop(id: number): void {
    this.controllers.delete(id);
  }

  bodyStarted(id: number): void {
    this.bodies.add(id);
  }

  bodyEnded(id: number): void {
    this.bodies.delete(id);
  }

  outcomeSent(id: number): void {
    this.settling.set(id, (this.settling.get(id) ?? 0) + 1);
  }

  /** Outcomes answered (recorded or not): their jobs are no longer on their way. */
  outcomesAnswered(outcomes: { id: number }[]): void {
    for (const { id } of outcomes) {
      const n = (this.settling.get(id) ?? 1) - 1;
      if (n > 0) this.settling.set(id, n);
      else this.settling.delete(id);
    }
  }

  /** Every job this engine knows it leases or is settling (what a release of unheld jobs must leave alone). */
  known(): number[] {
    return [...this.controllers.keys(), ...this.settling.keys()];
  }
}
