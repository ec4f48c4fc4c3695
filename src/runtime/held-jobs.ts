import type { ClaimedJob } from "../sql/claim/claim-answer.js";
import type { StartResult } from "../sql/claim/start.js";
import type { Outcome } from "../sql/settle/settle.js";
import { isHeld, isQueued, nextLife, type JobLife, type LifeEvent, type LifeState } from "./job-life.js";
import { JobAbort } from "./signal.js";

/** A queued job as the engine runs it; `runBy`, with a `maxStarts` token: the latest moment its run may begin. */
export interface ReadyJob { job: ClaimedJob; runBy?: { clock: number; mono: number } }

/**
 * Every job an engine knows of, in one map of lives (job-life.ts), moved only by `nextLife`; plus the claim
 * order of the queued ones, and a count per state so that each look costs what it takes, not the number of
 * jobs held (a worker lane may hold thousands of quick ones).
 */
export class HeldJobs {
  private readonly lives = new Map<number, JobLife>();
  /** Ids of queued lives in claim order (entries whose life moved on are skipped as they come up). */
  private order: number[] = [];
  private readonly counts: Record<LifeState, number> = { waiting: 0, requested: 0, ready: 0, running: 0, settling: 0, unsettled: 0 };

  /** Jobs held and not started. */
  get queued(): number { return this.counts.waiting + this.counts.requested + this.counts.ready; }

  /** Bodies running (a body past its timeout runs until it ends: job-runs.ts). */
  get running(): number { return this.counts.running; }

  /** Outcomes whose statement went unanswered, to send again. */
  get unsettled(): number { return this.counts.unsettled; }

  /** Jobs this engine holds, whatever their state (settling and unsettled ones too). */
  get size(): number { return this.lives.size; }

  lifeOf(id: number): JobLife | undefined {
    return this.lives.get(id);
  }

  /** Applies `event` to job `id`'s life; answers whether the outcome it settled was lost (not this engine's run any more). */
  apply(id: number, event: LifeEvent): { lost: boolean; ignored: boolean } {
    const before = this.lives.get(id);
    const step = nextLife(before, event);
    if (step.ignored) return { lost: false, ignored: true };
    const after = step.life;
    if (before) this.counts[before.state]--;
    if (after) {
      this.counts[after.state]++;
      this.lives.set(id, after);
      // Queued anew (claimed, or a parked copy whose turn came): it joins the claim order at the end. (A queued
      // job a claim handed over again keeps its place.)
      if (isQueued(after) && (!before || !isQueued(before))) {
        // (A parked copy queued again: its id's old place, stale since, goes first, so an id stands once.)
        if (before) this.order = this.order.filter((x) => x !== id);
        this.order.push(id);
      }
    } else this.lives.delete(id);
    return { lost: step.lost === true, ignored: false };
  }

  /** A claim handed `job` over. */
  admit(job: ClaimedJob): void {
    this.apply(job.id, { kind: "claimed", job, controller: new JobAbort() });
  }

  controllerOf(id: number): JobAbort | undefined {
    const life = this.lives.get(id);
    return life && isHeld(life) ? life.controller : life?.next?.controller;
  }

  /** The controllers of every job leased to this engine for a run not ended (what a heartbeat renews). */
  held(): Map<number, JobAbort> {
    const held = new Map<number, JobAbort>();
    for (const [id, life] of this.lives) {
      const controller = isHeld(life) ? life.controller : life.next?.controller;
      if (controller) held.set(id, controller);
    }
    return held;
  }

  /** Every job this engine holds, settles or parked: what a release of unheld jobs must leave alone. */
  known(): number[] {
    return [...this.lives.keys()];
  }

  /** The queued lives in claim order, lazily (a look that stops early costs what it reads). */
  private *queuedInOrder(): Generator<[number, JobLife]> {
    for (const id of this.order) {
      const life = this.lives.get(id);
      if (life && isQueued(life)) yield [id, life];
    }
  }

  /**
   * The queued jobs `which` picks among those whose start is not on its way (one that is may be back in the
   * queue table when the answer comes), taken out of the queue: the caller ends each with `notRun`.
   */
  takeUnstarted(which: (job: ClaimedJob) => boolean = () => true): ClaimedJob[] {
    if (this.counts.waiting + this.counts.ready === 0) return [];
    const taken: ClaimedJob[] = [];
    for (const [, life] of this.queuedInOrder()) if (life.state !== "requested" && which(life.job)) taken.push(life.job);
    // (A pass over the whole queue anyway: the order drops what is no longer queued.)
    this.order = this.order.filter((id) => { const life = this.lives.get(id); return life !== undefined && isQueued(life); });
    return taken;
  }

  /**
   * The first queued job, if it is ready: jobs start strictly in claim order (so in priority order), none
   * before an earlier one whose start is still to be asked or answered. The caller runs it or releases it.
   */
  nextReady(): ReadyJob | undefined {
    if (this.counts.ready === 0) return undefined;
    while (this.order.length > 0) {
      const id = this.order[0];
      const life = this.lives.get(id);
      if (!life || !isQueued(life)) { this.order.shift(); continue; }
      if (life.state !== "ready") return undefined;
      this.order.shift();
      return { job: life.job, ...(life.runBy ? { runBy: life.runBy } : {}) };
    }
    return undefined;
  }

  /** The job `nextReady` would hand over, left in the queue. */
  peekReady(): ClaimedJob | undefined {
    if (this.counts.ready === 0) return undefined;
    const head = this.head();
    return head?.state === "ready" ? head.job : undefined;
  }

  /** The first queued job in claim order, whatever its start's state: no other job starts before it. */
  firstQueued(): ClaimedJob | undefined {
    return this.head()?.job;
  }

  private head(): JobLife | undefined {
    for (const [, life] of this.queuedInOrder()) return life;
    return undefined;
  }

  /** Whether a job of `task` is held and not started (a look that stops at the first one). */
  holdsUnstarted(task: string): boolean {
    if (this.queued === 0) return false;
    for (const [, life] of this.queuedInOrder()) if (life.job.task === task) return true;
    return false;
  }

  /**
   * The waiting jobs to ask the next statement to start, now `requested`: those that would start within the free
   * slots plus `lookahead` more (what starts within one round trip), counting the queued jobs ahead of each (they
   * start before it: jobs start in claim order). A limited job is asked for only into a free slot (its
   * `maxStarts` token is stamped when it is started), except the first queued job, which everything waits for.
   * `slotsForLimited`: the slots truly free, when `freeSlots` also counts the room of filling batches (batches.ts).
   */
  pickStarts(freeSlots: number, lookahead: number, slotsForLimited = freeSlots): ClaimedJob[] {
    if (this.counts.waiting === 0) return [];
    const next: ClaimedJob[] = [];
    let ahead = 0;
    for (const id of this.order) {
      const life = this.lives.get(id);
      if (!life || !isQueued(life)) continue;
      if (ahead >= freeSlots + lookahead && !(ahead === 0 && freeSlots > 0)) break;
      if (life.state === "waiting") {
        const room = life.job.limited ? slotsForLimited : freeSlots + lookahead;
        if (ahead >= room && !(ahead === 0 && freeSlots > 0)) continue;
        next.push(life.job);
      }
      ahead++;
    }
    for (const job of next) this.apply(job.id, { kind: "startAsked" });
    return next;
  }

  /**
   * The answer to a start request for `ids` sent at `sent` (null: the request failed): those started are ready
   * for a slot, a job that took a `maxStarts` token by the deadline its slack gives; the others (cancelled,
   * denied a limit, not ours any more, or a failed request: put back as unheld jobs, never run, no attempt
   * spent) are no longer held.
   */
  answerStarts(ids: number[], result: StartResult | null, sent: { clock: number; mono: number }): void {
    const started = new Set(result?.started ?? []);
    for (const id of ids) {
      const slack = result?.slack?.[String(id)];
      const runBy = slack === undefined ? undefined : { clock: sent.clock + Number(slack), mono: sent.mono + Number(slack) };
      this.apply(id, { kind: "startAnswered", started: started.has(id), ...(runBy ? { runBy } : {}) });
    }
  }

  /**
   * The database answered a settle of `sent`, moving the jobs in `moved`; `unsure`: an earlier try may have
   * committed unanswered, so an outcome it did not move may be recorded already. Answers how many outcomes
   * were not recorded (their run was not this engine's any more).
   */
  settleAnswered(sent: Outcome[], moved: readonly { id: number }[], unsure: boolean): number {
    const applied = new Set(moved.map((j) => j.id));
    let lost = 0;
    for (const outcome of sent) {
      if (!this.settles(outcome)) continue;
      // An outcome sent again after an unanswered statement may have been recorded by that one.
      const recorded = unsure || applied.has(outcome.id) || this.lives.get(outcome.id)?.unsure === true;
      if (this.apply(outcome.id, { kind: "settled", recorded }).lost) lost++;
    }
    return lost;
  }

  /** A settle of `outcomes` went unanswered: they are kept, to be sent again (`resend`). */
  settleLost(outcomes: Outcome[], unsure: boolean): void {
    for (const outcome of outcomes) if (this.settles(outcome)) this.apply(outcome.id, { kind: "settleLost", unsure });
  }

  /** `outcome` (as sent: the settler may have made it storable) is the one its job's life is settling. */
  private settles(outcome: Outcome): boolean {
    const life = this.lives.get(outcome.id);
    return life?.state === "settling" && life.outcome?.attempt === outcome.attempt;
  }

  /** The unsettled outcomes, now on their way again. */
  resend(): Outcome[] {
    if (this.counts.unsettled === 0) return [];
    const again: Outcome[] = [];
    for (const [id, life] of this.lives) {
      if (life.state !== "unsettled") continue;
      again.push(life.outcome!);
      this.apply(id, { kind: "resent" });
    }
    return again;
  }

  /** Outcomes never confirmed, by whether a try of theirs may have committed. */
  unconfirmed(): { lost: number; unsure: number } {
    let lost = 0;
    let unsure = 0;
    for (const life of this.lives.values()) if (life.state === "unsettled") life.unsure ? unsure++ : lost++;
    return { lost, unsure };
  }
}
