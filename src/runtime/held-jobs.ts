import type { ClaimedJob } from "../sql/claim.js";
import type { StartResult } from "../sql/start.js";
import type { Outcome } from "../sql/settle.js";
import { LocalQueue, notRequested, type LocalJob } from "./local-queue.js";
import { JobAbort } from "./signal.js";

/**
 * A job's whole life in one engine, in one place: held (leased to the engine, with the controller its body
 * gets), waiting in the local queue (waiting, its start requested, started and ready for a slot), its body
 * running, its outcome on its way to the database; and what that means when a claim of the same engine hands
 * the job back after its lease lapsed (a body held the event loop, a heartbeat stalled) and a claim recovered
 * it. The engine never runs one job twice beside itself.
 */
export class HeldJobs {
  /** Every job held (waiting locally or running), with the controller its body gets. */
  readonly controllers = new Map<number, JobAbort>();
  /** The held jobs not started yet, in claim order (local-queue.ts). */
  private readonly queue = new LocalQueue();
  private readonly bodies = new Set<number>();
  /** Outcomes handed to the settler and not yet answered, by job id: how many. */
  private readonly settling = new Map<number, number>();
  /**
   * Jobs whose body ran here and whose outcome no answer has confirmed: their settles failed unanswered (or
   * are on their way). Each may still be `running` under this owner, attempt spent by a body that ran, so
   * only its lease expiry may put it back (charged); a release of unheld jobs must leave it alone.
   */
  private readonly ranUnsettled = new Set<number>();
  /**
   * Jobs that ended here for good (a settle recorded a final outcome, or they completed on their own) while a
   * claim was on its way. That claim may hand one back: it took the row first, then the settle finished the
   * row under the same owner. Such a copy is stale. Cleared at each claim's answer (one is on its way at a time).
   */
  private readonly endedWhileClaiming = new Set<number>();
  /**
   * The two orders in which a body's outcome and a claim that hands its job back cross, and the outcome would
   * be lost while the job runs again: a settle found the job not this owner's (the claim had not committed)
   * while that claim was on its way, or the claim handed the job back while its outcome was on its way. Either
   * way the job is this owner's again, and the outcome its one body produced is sent again under the new lease.
   */
  private readonly unappliedWhileClaiming = new Map<number, Outcome>();
  /** Jobs a claim handed back while their outcome was on its way, with the attempt that claim gave them. */
  private readonly handedBackWhileSettling = new Map<number, number>();

  /** Held jobs whose bodies have not started. */
  get queued(): number { return this.queue.length; }

  /** Bodies running (a body past its timeout runs until it ends or the invocation does). */
  get running(): number { return this.bodies.size; }

  /**
   * A claim handed `job` over: held (a fresh controller) and queued, `ready` if the claim started it. A copy
   * waiting in the local queue already is replaced by this one. Skipped when its body runs or its outcome is
   * on its way (both now settle under the renewed lease), or when the copy is stale.
   */
  admit(job: ClaimedJob): Outcome | undefined {
    const id = job.id;
    const unapplied = this.unappliedWhileClaiming.get(id);
    if (unapplied) {
      // Its body ran here and ended; the settle came before this claim committed: send that outcome again,
      // for the attempt this claim's run has.
      this.unappliedWhileClaiming.delete(id);
      return { ...unapplied, attempt: job.attempt };
    }
    if (this.settling.has(id)) this.handedBackWhileSettling.set(id, job.attempt);
    if (this.endedWhileClaiming.has(id) || this.bodies.has(id) || this.settling.has(id)) return undefined;
    if (this.controllers.has(id)) this.queue.removeWhere((l) => l.job.id === id);
    this.controllers.set(id, new JobAbort());
    this.queue.push(job, job.started ? "ready" : "waiting");
    return undefined;
  }

  /**
   * A claim was answered (or failed): the jobs that ended while it was on its way are no longer in question,
   * and the outcomes it did not hand back are lost (their jobs are not this owner's). Answers how many.
   */
  claimAnswered(): number {
    this.endedWhileClaiming.clear();
    const lost = this.unappliedWhileClaiming.size;
    for (const id of this.unappliedWhileClaiming.keys()) this.ranUnsettled.delete(id);
    this.unappliedWhileClaiming.clear();
    return lost;
  }

  /** A job ended for good; `claiming`: while a claim was on its way. */
  endedForGood(id: number, claiming: boolean): void {
    this.ranUnsettled.delete(id);
    if (claiming) this.endedWhileClaiming.add(id);
  }

  controllerOf(id: number): JobAbort | undefined {
    return this.controllers.get(id);
  }

  /** No longer held: released, denied its start, or its body ended. */
  drop(id: number): void {
    this.controllers.delete(id);
  }

  /**
   * Takes out of the local queue, no longer held, the jobs `which` picks among those whose start is not on its
   * way (one that is may be back in the queue table when the answer comes): the caller releases them.
   */
  takeUnstarted(which: (job: ClaimedJob) => boolean = () => true): ClaimedJob[] {
    return this.queue.removeWhere((l) => notRequested(l) && which(l.job)).map(({ job }) => { this.drop(job.id); return job; });
  }

  /** The first queued job a start answer marked started, in claim order (local-queue.ts), taken out of the queue. */
  takeReady(): LocalJob | undefined {
    return this.queue.takeReady();
  }

  /** The waiting jobs to ask the next statement to start (local-queue.ts), for `freeSlots` free slots and `lookahead` more. */
  pickStarts(freeSlots: number, lookahead: number): LocalJob[] {
    return this.queue.pickStarts(freeSlots, lookahead);
  }

  /**
   * The answer to a start request for `ids` sent at `sent` (null: the request failed): those started are ready
   * for a slot, a job that took a `maxStarts` token by the deadline its slack gives; the others (stopped,
   * denied a limit, not ours any more, or a failed request: left to lease expiry, never started, no attempt
   * spent) are no longer held.
   */
  answerStarts(ids: number[], result: StartResult | null, sent: { clock: number; mono: number }): void {
    const startBy = (id: number) => {
      const slack = result?.slack?.[String(id)];
      return slack === undefined ? undefined : { clock: sent.clock + Number(slack), mono: sent.mono + Number(slack) };
    };
    for (const local of this.queue.answerStarts(ids, new Set(result?.started ?? []), startBy)) this.drop(local.job.id);
  }

  /** Its body runs: it no longer waits in the local queue (takeReady took it out). */
  bodyStarted(id: number): void {
    this.bodies.add(id);
    this.ranUnsettled.add(id);
  }

  /** Its body ended (or, past its timeout, was left behind at the invocation's end): no longer held. */
  bodyEnded(id: number): void {
    this.drop(id);
    this.bodies.delete(id);
  }

  outcomeSent(id: number): void {
    this.settling.set(id, (this.settling.get(id) ?? 0) + 1);
  }

  /**
   * The database answered a settle of `sent`, moving the jobs in `moved` (those not back to `queued` ended for
   * good); `unsure`: an earlier try may have committed unanswered. Each other one was recorded already (unsure)
   * or its job was not this owner's when the statement ran (or no longer at that attempt). Answers the outcomes
   * to send again now (their job was handed back meanwhile, and the settle found it not ours: the claim took
   * it back before the settle ran), and how many are kept until the claim on its way (`claiming`) is answered;
   * the rest are lost.
   *
   * `unheld`: a claim handed back a job whose outcome this settle recorded (or may have, `unsure`), so it
   * took the run that outcome made due again (a retry or snooze due at once), and that copy was not queued
   * here because the outcome was on its way. No body holds that run: it is leased to this owner and unheld,
   * for the engine's release of unheld jobs to put back, attempt refunded, rather than its lease's expiry.
   */
  settleAnswered(sent: Outcome[], moved: readonly { id: number; to: string }[], unsure: boolean, claiming: boolean): { again: Outcome[]; kept: number; unheld: boolean } {
    for (const j of moved) if (j.to !== "queued") this.endedForGood(j.id, claiming);
    const applied = new Set(moved.map((j) => j.id));
    const again: Outcome[] = [];
    let kept = 0;
    let unheld = false;
    for (const outcome of sent) {
      const id = outcome.id;
      this.settleEnded(id);
      const handedBack = this.handedBackWhileSettling.get(id);
      this.handedBackWhileSettling.delete(id);
      if (applied.has(id) || unsure) {
        this.ranUnsettled.delete(id);
        if (handedBack !== undefined) unheld = true;
      } else if (handedBack !== undefined) again.push({ ...outcome, attempt: handedBack });
      else if (claiming) { this.unappliedWhileClaiming.set(id, outcome); kept++; }
      else this.ranUnsettled.delete(id);
    }
    return { again, kept, unheld };
  }

  /**
   * A settle of `outcomes` went unanswered (the database unreachable): they are no longer on their way, and
   * their leases expire. Answers whether a claim handed one of them back meanwhile: that run is leased to this
   * owner and unheld (see settleAnswered), for the release of unheld jobs.
   */
  outcomesLost(outcomes: { id: number }[]): boolean {
    let unheld = false;
    for (const { id } of outcomes) {
      this.settleEnded(id);
      if (this.handedBackWhileSettling.delete(id)) {
        // The claim took the job back, so the run its body made is no longer the one leased: the lease is that claim's.
        this.ranUnsettled.delete(id);
        unheld = true;
      }
    }
    return unheld;
  }

  private settleEnded(id: number): void {
    const n = (this.settling.get(id) ?? 1) - 1;
    if (n > 0) this.settling.set(id, n);
    else this.settling.delete(id);
  }

  /**
   * Every job this engine knows it leases, is settling, or ran without an answer to its outcome: what a
   * release of unheld jobs must leave alone.
   */
  known(): number[] {
    return [...new Set([...this.controllers.keys(), ...this.settling.keys(), ...this.ranUnsettled])];
  }
}
