import { queryJsonWithin, requestTimeoutMs } from "./timed-query.js";
import type { ClaimedJob } from "../sql/claim/claim.js";
import type { StartResult } from "../sql/claim/start.js";
import { Claimer, longestTimeoutMs, type Claim } from "./claimer.js";
import { Heartbeat, judgeBeat } from "./heartbeat.js";
import { JobRuns } from "./job-runs.js";
import type { RunSummary } from "./run-options.js";
import { Pace } from "./pace.js";
import type { BudgetClock } from "./budget-clock.js";
import { Settler } from "./settler.js";
import { UnheldJobs } from "./unheld-jobs.js";
import { CLAIM_MARGIN_MS, RETRY_MAX_MS, RETRY_MIN_MS } from "./run-options.js";
import { countClaim, countCompleted, emptySummary, SummaryDeltas, Unreported, type Counts } from "./summary.js";
import type { EngineOptions } from "./engine-options.js";
import { type JobAbort, Wakeup } from "./signal.js";
import { HeldJobs } from "./held-jobs.js";
import { nextCycle, START, type ClaimCycle, type ClaimEvent } from "./claim-cycle.js";
import type { ClaimPolicy, ClaimView } from "./claim-policy.js";


/**
 * The invocation engine: a claimer, a local queue of prefetched jobs, `slots` runners, an outcome buffer
 * (the settler, which also starts prefetched jobs) and a heartbeat, composed. It claims the next batch
 * before the local queue runs dry, starts a prefetched job only after a statement marked it started (so a
 * crash charges only what may have run) and took its limit slot and token, and at the budget's end or on
 * stop releases what never started, attempt unspent.
 */
export class Engine {
  readonly summary: RunSummary;
  private readonly claimer: Claimer;
  private readonly settler: Settler;
  private readonly heartbeat: Heartbeat;
  /** The jobs' runs in their slots, and their outcomes on to the settler (job-runs.ts). */
  private readonly runs: JobRuns;
  private readonly change = new Wakeup();
  /** Every job this engine holds (queued locally or running) or settles: a job's local life (held-jobs.ts). */
  private readonly jobs = new HeldJobs();
  /** Where claiming stands (claim-cycle.ts): changed only by `on`, through the pure transition function. */
  private cycle: ClaimCycle = START;
  private readonly policy: ClaimPolicy;
  /** In the backoff phase: the timer that ends it (the drain goes on while budget remains). */
  private claimRetry: ReturnType<typeof setTimeout> | undefined;
  private claimFailures = 0;
  /** No claim was answered yet: the next one is the first (what rides on it may differ: retention, its backlog). */
  private claimedOnce = false;
  private lastClaimError: unknown;
  /** Jobs a claim whose answer was lost may have leased to this owner (unheld-jobs.ts). */
  private readonly unheld: UnheldJobs;
  /** Jobs that ended since the last claim: their bodies may have enqueued more, worth one more look. */
  private endedSinceClaim = 0;
  private readonly unreported = new Unreported();
  private readonly deltas: SummaryDeltas;
  /** Moving averages that size how many jobs to start ahead of free slots. */
  private readonly pace: Pace;

  /** The budget, on the monotonic clock for the real clock. */
  private readonly budget: BudgetClock;

  constructor(private readonly o: EngineOptions) {
    this.policy = o.policy;
    this.budget = o.budget;
    this.summary = emptySummary(o.id);
    this.deltas = new SummaryDeltas(this.summary);
    this.pace = new Pace(o.app, o.slots, o.batchSize);
    this.claimer = new Claimer({
      app: o.app, db: o.db, owner: o.owner, leaseMs: o.leaseMs, queues: o.queues, sqlNow: o.sqlNow, now: o.now,
      remainingMs: () => this.budget.remainingMs(), count: () => { this.summary.roundTrips++; },
      roundTripMs: () => this.pace.roundTripMs, requestTimeoutMs: () => this.requestTimeoutMs(), riders: o.riders, trace: o.trace,
    });
    this.settler = new Settler({
      db: o.db, hooks: o.app.hooks, owner: o.owner, sqlNow: o.sqlNow, now: o.now, keepSucceeded: o.keepSucceeded !== false, wakeParents: o.app.hasWorkflows(),
      after: () => this.unreported.take((n) => o.settleAfter(n, this.jobs.running === 0 && this.jobs.queued === 0)),
      sent: (ms) => { this.summary.roundTrips++; this.pace.roundTripTook(ms); },
      done: (jobs, sent, unsure) => {
        const lost = this.jobs.settleAnswered(sent, jobs, unsure);
        if (unsure) this.summary.unconfirmed += sent.length - jobs.length;
        else this.summary.lost += lost;
        countCompleted(this.summary, jobs);
        this.unreported.settled(jobs);
      },
      // Unanswered: kept and sent again after a backoff, and once more at the end (job-runs.ts).
      lost: (outcomes, _error, unsure) => { this.runs.unanswered(outcomes, unsure); },
      requestTimeoutMs: () => this.requestTimeoutMs(), remainingMs: () => this.budget.remainingMs(),
      started: (request, result, sent) => this.onStarted(request.ids, result, sent), trace: o.trace,
    });
    this.runs = new JobRuns({
      engine: o, jobs: this.jobs, settler: this.settler, summary: this.summary, unreported: this.unreported, pace: this.pace,
      budget: this.budget,
      ended: () => { this.endedSinceClaim++; this.change.notify(); },
      freed: () => { this.change.notify(); },
      mayGrow: (task) => this.mayStartMore(task),
    });
    this.unheld = new UnheldJobs({
      db: o.db, owner: o.owner, requestTimeoutMs: () => this.requestTimeoutMs(), onError: o.onError,
      count: () => { this.summary.roundTrips++; }, released: (n) => { this.summary.released += n; },
    });
    this.heartbeat = new Heartbeat({
      db: o.db, owner: o.owner, leaseMs: o.leaseMs, now: o.sqlNow, intervalMs: o.heartbeatMs,
      held: () => this.jobs.held(), requestTimeoutMs: () => this.requestTimeoutMs(),
      count: () => { this.summary.roundTrips++; },
      onBeat: (covered, held, unnamed) => this.onBeat(covered, held, unnamed),
    });
  }

  /** What the engine did since the last call (a worker lane reports it at each idle moment), as a summary of its own. */
  takeDelta(): RunSummary & Counts {
    return this.deltas.take();
  }

  /** Runs until the budget is spent, the work is done (and `idle` says stop) or `signal` aborts; never rejects once a body runs. */
  async run(): Promise<RunSummary> {
    this.heartbeat.start();
    // Look again when the budget ends or the signal aborts, even if nothing else happens then.
    const cancelAtEnd = this.budget.whenSpent(() => this.change.notify());
    const onAbort = () => this.change.notify();
    this.o.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      await this.loop();
    } finally {
      cancelAtEnd();
      this.o.signal?.removeEventListener("abort", onAbort);
      clearTimeout(this.claimRetry);
      await this.settler.flush();
      await this.runs.resendAtEnd();
      this.heartbeat.stop();
      await this.reportUncounted();
      // (Tried again when it goes unanswered: what it would put back otherwise waits for its lease.)
      for (let i = 0; i < 3 && this.unheld.mayExist; i++) await this.unheld.release(() => this.jobs.known());
      await this.claimer.finished();
      this.pace.save();
      this.summary.tooLongForBudget = this.claimer.tooLongForBudget ?? [];
      this.summary.durationMs = this.budget.elapsedMs();
    }
    // An invocation none of whose claims was answered says why (a worker lane keeps polling instead).
    if (!this.claimedOnce && this.lastClaimError !== undefined && !this.policy.idles) throw this.lastClaimError;
    return this.summary;
  }


  /** What the claim policy sizes a claim by. */
  private view(): ClaimView {
    return { slots: this.o.slots, queued: this.jobs.queued, lookahead: this.pace.lookahead(), paced: this.pace.known };
  }

  /** The claim cycle's one way forward. */
  private on(event: ClaimEvent): void {
    this.cycle = nextCycle(this.cycle, event, this.policy);
  }

  private requestTimeoutMs(): number {
    return requestTimeoutMs(this.o.db, this.budget.remainingMs());
  }

  /** Jobs that completed on their own after the last settle that counted jobs done: told once, at the end. */
  private async reportUncounted(): Promise<void> {
    const uncounted = this.unreported.drain();
    const statement = uncounted > 0 ? this.o.reportUncounted?.(uncounted) : null;
    if (!statement) return;
    this.summary.roundTrips++;
    try {
      await queryJsonWithin(this.o.db, statement, this.requestTimeoutMs(), "a registry update");
    } catch (error) {
      this.o.onError?.(error);
    }
  }

  private stopping(): boolean {
    return this.o.signal?.aborted === true || this.budget.remainingMs() <= 0;
  }

  private async loop(): Promise<void> {
    for (;;) {
      this.dispatch();
      // What changed may leave a filling batch nothing more to wait for.
      this.runs.batches.review();
      const phase = this.cycle.phase;
      const quiet = this.jobs.running === 0 && this.jobs.queued === 0 && phase !== "claiming" && phase !== "backoff" && !this.settler.startPending;
      if (quiet && (!this.policy.idles || phase === "ended" || this.stopping())) return;
      await this.change.wait();
    }
  }

  /** A worker lane waits for a wake-up or its next poll whenever its claims ran dry, even while other slots run. */
  private waitForWork(): void {
    const idle = this.policy.idle;
    if (!idle || this.cycle.phase !== "exhausted" || this.stopping()) return;
    this.on({ kind: "idleStarted" });
    idle().then((again) => { this.on({ kind: "idleEnded", again }); },
      (error) => { this.on({ kind: "idleEnded", again: false }); this.o.onError?.(error); })
      .finally(() => { this.change.notify(); });
  }

  /**
   * Whether jobs of `task` may still start here soon, so that a batch of it waits for them: some are held and
   * not started, a claim may come (or a worker lane may be woken), and the engine is not stopping. Not while
   * every slot is taken and another task's job is the next to start (jobs start in claim order).
   */
  private mayStartMore(task: string): boolean {
    if (this.stopping()) return false;
    if (this.runs.slotsTaken >= this.o.slots && (this.jobs.firstQueued()?.task ?? task) !== task) return false;
    const phase = this.cycle.phase;
    return this.policy.idles || phase === "open" || phase === "claiming" || phase === "backoff" || this.jobs.holdsUnstarted(task);
  }

  private dispatch(): void {
    if (this.stopping()) {
      // A job whose start is on its way waits for the answer: denied or stopped, it is back in the queue
      // table already, and a release would find it gone; started, it is released then (attempt refunded).
      for (const job of this.jobs.takeUnstarted()) this.runs.release(job);
      return;
    }
    const remaining = this.budget.remainingMs();
    const timeoutOf = (job: ClaimedJob) => this.o.app.tasks.get(job.task)?.timeoutMs;
    if (remaining < Math.max(longestTimeoutMs(this.o.app), CLAIM_MARGIN_MS)) this.runs.releaseUnfitting(remaining);
    // (A job that joins a filling batch takes no slot of its own.)
    while (this.runs.slotsTaken < this.o.slots || this.runs.joinsBatch(() => this.jobs.peekReady())) {
      const local = this.jobs.nextReady();
      if (!local) break;
      const { job, startBy } = local;
      if (startBy && ((!this.budget.monotonic && this.o.now().getTime() > startBy.clock) || performance.now() > startBy.mono)) {
        // Its token was stamped too long ago for this start to count inside the window: release it.
        this.runs.release(job);
      } else this.runs.start(job, timeoutOf(job) ?? remaining);
    }
    if (!this.settler.startPending) {
      const free = this.o.slots - this.runs.slotsTaken;
      const next = this.jobs.pickStarts(free + this.runs.batches.room, this.pace.lookahead(), free);
      if (next.length > 0) this.settler.requestStart({ ids: next.map((j) => j.id), limited: next.some((j) => j.limited) });
    }
    // A claim that came back short while bodies still ran gets one more look once everything is done:
    // those bodies (or their completions) may have enqueued more.
    if (this.jobs.queued === 0 && this.jobs.running === 0) this.on({ kind: "quiet", endedSinceClaim: this.endedSinceClaim });
    if (this.cycle.phase === "open" && this.policy.worthClaiming(this.view())) this.claimNext();
    this.waitForWork();
  }

  /** Sends a claim (the first one, until one was answered, has the first claim's size and riders). */
  private claimNext(): void {
    this.endedSinceClaim = 0;
    const first = !this.claimedOnce;
    // Started in the claim itself: jobs for the slots that will be free, plus those that would start within a round trip.
    const starts = Math.max(0, this.o.slots - this.runs.slotsTaken - this.jobs.queued) + Math.max(0, this.pace.lookahead() - this.jobs.queued);
    const size = first ? this.policy.firstSize(this.view()) : this.policy.nextSize(this.view());
    const sent = performance.now();
    this.on({ kind: "sent" });
    void this.unheld.release(() => this.jobs.known())
      .then(() => this.claimer.claim(size, starts, first))
      .then((claim) => {
        this.claimFailures = 0;
        this.claimedOnce = true;
        this.pace.roundTripTook(performance.now() - sent);
        this.accept(claim, size);
      }, (error) => { this.claimFailed(error); })
      .finally(() => { this.change.notify(); });
  }

  /**
   * A later claim failed. Its answer may have been lost after it committed (unheld-jobs.ts). A worker
   * lane waits for its next poll; an invocation tries again after a short backoff while its budget lasts,
   * rather than ending its drain with jobs still due.
   */
  private claimFailed(error: unknown): void {
    this.lastClaimError = error;
    this.unheld.claimFailed(error);
    this.o.onError?.(error);
    const backoff = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** this.claimFailures++);
    this.on({ kind: "failed", retry: !this.stopping() && backoff < this.budget.remainingMs() });
    if (this.cycle.phase !== "backoff") return;
    this.claimRetry = setTimeout(() => { this.claimRetry = undefined; this.on({ kind: "retryDue" }); this.change.notify(); }, backoff);
  }

  private accept(claim: Claim, asked: number): void {
    countClaim(this.summary, claim);
    this.o.onClaim?.(claim, asked);
    for (const job of claim.claimed) this.jobs.admit(job);
    // A short claim found everything claimable (for now); jobs the schedules enqueued or recovery requeued in
    // the same statement were invisible to it, so those call for one more claim. Sent while bodies ran, it is
    // worth one more look once they end: they may have enqueued more.
    this.on({
      kind: "answered", short: claim.claimed.length < asked, noTaskFits: claim.noTaskFits,
      more: (claim.scheduled ?? 0) > 0 || claim.recovered.length > 0 || claim.more,
      busy: this.jobs.running > 0 || this.jobs.queued > claim.claimed.length,
    });
  }

  private onStarted(ids: number[], result: StartResult | null, sent: { clock: number; mono: number }): void {
    this.jobs.answerStarts(ids, result, sent);
    if (result) {
      this.summary.cancelled += result.stopped.length;
      this.summary.released += result.denied.length;
    }
    this.change.notify();
  }

  private onBeat(covered: ReadonlyMap<number, JobAbort>, held: { id: number; stop: boolean }[], unnamed: number): void {
    judgeBeat(covered, held, (id) => this.jobs.controllerOf(id));
    // Jobs leased to this engine that the beat did not name were claimed meanwhile or are forgotten, and a
    // forgotten job's lease (its owner's) lasts as long as this engine: the next claim, or the engine's end,
    // first puts back those the engine does not know (nothing, for the former).
    if (unnamed > 0) this.unheld.mayExist = true;
    this.change.notify();
  }
}
