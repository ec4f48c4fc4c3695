import { queryJsonWithin } from "./timed-query.js";
import type { ClaimedJob } from "../sql/claim/claim-answer.js";
import { Claimer, longestTimeoutMs, type Claim } from "./claimer.js";
import { Heartbeat } from "./heartbeat.js";
import { JobRuns } from "./job-runs.js";
import { Pace } from "./pace.js";
import { Settler } from "./settler.js";
import { UnheldJobs } from "./unheld-jobs.js";
import { CLAIM_MARGIN_MS } from "../core/claim-margin.js";
import { RETRY_MAX_MS, RETRY_MIN_MS } from "./retry-wait.js";
import { Summary, Unreported } from "./summary.js";
import { leaseOwnerFor, type EngineOptions } from "./engine-options.js";
import { answerTimeoutMs, type EngineContext, type EngineDecisions } from "./engine-context.js";
import { Wakeup, yieldToIo } from "./signal.js";
import { HeldJobs } from "./held-jobs.js";
import { nextCycle, NEW_CYCLE, type ClaimCycle, type ClaimEvent } from "./claim-cycle.js";
import type { ClaimView } from "./claim-policy.js";


/**
 * The engine of one invocation or one worker lane: a claimer, a local queue of prefetched jobs, `slots` runs at
 * once, an outcome buffer (the settler, which also starts prefetched jobs) and a heartbeat, composed over one
 * context (engine-context.ts). It claims the next batch before the local queue runs dry, runs a prefetched job
 * only after a statement marked it started (so a crash charges only what may have run) and took its limit slot
 * and token, and at the budget's end or on stop releases what never started, attempt unspent.
 */
export class Engine implements EngineDecisions {
  /** What the engine did, counted as it happens: a worker lane takes it at each idle moment (summary.ts). */
  readonly summary: Summary;
  /** This engine's lease owner: unique to it. */
  readonly owner: string;
  /** What its collaborators share. */
  private readonly ctx: EngineContext;
  private readonly claimer: Claimer;
  private readonly settler: Settler;
  private readonly heartbeat: Heartbeat;
  /** The jobs' runs in their slots, and their outcomes on to the settler (job-runs.ts). */
  private readonly runs: JobRuns;
  /** Jobs a claim whose answer was lost may have leased to this owner (unheld-jobs.ts). */
  private readonly unheld: UnheldJobs;
  /** Where claiming stands (claim-cycle.ts): changed only by `on`, through the pure transition function. */
  private cycle: ClaimCycle = NEW_CYCLE;
  /** In the backoff phase: the timer that ends it (the drain goes on while budget remains). */
  private claimRetry: ReturnType<typeof setTimeout> | undefined;
  private claimFailures = 0;
  /** No claim was answered yet: the next one is the first (what rides on it may differ: retention, its backlog). */
  private claimedOnce = false;
  private lastClaimError: unknown;
  /** Runs ended when the last claim was sent: those ended since may have enqueued more, worth one more look. */
  private endedAtClaim = 0;
  /**
   * A claim was just asked for and the policy wants it out before the jobs held run on (`sendsClaimsAtOnce`).
   * Quick bodies end in microtasks and each ending wakes the loop in another, so the local queue would run to its
   * end before anything that waits outside the microtask queue; node-postgres's pool hands a query its
   * connection in a process.nextTick, so the claim would go out only then.
   */
  private claimToSend = false;

  constructor(private readonly o: EngineOptions) {
    this.summary = new Summary(o.id);
    this.owner = leaseOwnerFor(o.id);
    this.ctx = {
      app: o.app, db: o.db, owner: this.owner, queues: o.queues, leaseMs: o.leaseMs, heartbeatMs: o.heartbeatMs,
      now: o.now, sqlNow: o.sqlNow, budget: o.budget, riders: o.riders, drains: o.policy.drain, keepSucceeded: o.keepSucceeded !== false,
      settleAfter: o.settleAfter, onError: o.onError, trace: o.trace ?? null,
      jobs: new HeldJobs(), summary: this.summary, unreported: new Unreported(),
      pace: new Pace(o.app, o.slots, o.policy.batchSize), change: new Wakeup(), engine: this,
    };
    this.claimer = new Claimer(this.ctx);
    this.unheld = new UnheldJobs(this.ctx);
    this.settler = new Settler(this.ctx, this.unheld);
    this.runs = new JobRuns(this.ctx, this.settler);
    this.heartbeat = new Heartbeat(this.ctx, this.unheld);
  }

  /** Runs until the budget is spent, the work is done (and the policy does not idle) or `signal` aborts; never rejects once a body runs. */
  async run(): Promise<Summary> {
    const { budget, change, pace } = this.ctx;
    this.heartbeat.begin();
    // Look again when the budget ends or the signal aborts, even if nothing else happens then.
    const cancelAtEnd = budget.whenSpent(() => change.notify());
    const onAbort = () => change.notify();
    this.o.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      await this.loop();
    } finally {
      cancelAtEnd();
      this.o.signal?.removeEventListener("abort", onAbort);
      clearTimeout(this.claimRetry);
      await this.settler.flush();
      await this.settler.resendAtEnd();
      this.heartbeat.end();
      await this.reportUncounted();
      // (Tried again when it goes unanswered: what it would put back otherwise waits for its lease.)
      for (let i = 0; i < 3 && this.unheld.mayExist; i++) await this.unheld.release();
      await this.claimer.finished();
      pace.save();
      this.summary.ended(budget.elapsedMs(), this.claimer.tooLongForBudget ?? []);
    }
    // An invocation none of whose claims was answered says why (a worker lane keeps polling instead).
    if (!this.claimedOnce && this.lastClaimError !== undefined && !this.o.policy.idles) throw this.lastClaimError;
    return this.summary;
  }


  /** What the claim policy sizes a claim by. */
  private view(): ClaimView {
    const { jobs, pace } = this.ctx;
    return { slots: this.o.slots, queued: jobs.queued, free: Math.max(0, this.o.slots - this.runs.slotsTaken - jobs.queued), lookahead: pace.lookahead(), paced: pace.known };
  }

  /** The claim cycle's one way forward. */
  private on(event: ClaimEvent): void {
    this.cycle = nextCycle(this.cycle, event, this.o.policy);
  }

  /** Jobs that completed on their own after the last settle that counted jobs done: told once, at the end. */
  private async reportUncounted(): Promise<void> {
    const uncounted = this.ctx.unreported.drain();
    const statement = uncounted > 0 ? this.o.reportUncounted?.(uncounted) : null;
    if (!statement) return;
    this.summary.roundTrip();
    try {
      await queryJsonWithin(this.o.db, statement, answerTimeoutMs(this.ctx), "a registry update");
    } catch (error) {
      this.o.onError?.(error);
    }
  }

  /** The invocation's (or lane's) end: its budget is spent or its signal aborted. */
  private stopping(): boolean {
    return this.o.signal?.aborted === true || this.o.budget.remainingMs() <= 0;
  }

  private async loop(): Promise<void> {
    const { jobs, change } = this.ctx;
    for (;;) {
      this.dispatch();
      // What changed may leave a filling batch nothing more to wait for.
      this.runs.batches.review();
      const phase = this.cycle.phase;
      const quiet = jobs.running === 0 && jobs.queued === 0 && phase !== "claiming" && phase !== "backoff" && !this.settler.startPending;
      if (quiet && (!this.o.policy.idles || phase === "ended" || this.stopping())) return;
      await change.wait();
      if (this.claimToSend) {
        this.claimToSend = false;
        await yieldToIo();
      }
    }
  }

  /** A worker lane waits for a wake-up or its next poll whenever its claims ran dry, even while other slots run. */
  private waitForWork(): void {
    const idle = this.o.policy.idle;
    if (!idle || this.cycle.phase !== "exhausted" || this.stopping()) return;
    this.on({ kind: "idleBegan" });
    idle().then((again) => { this.on({ kind: "idleEnded", again }); },
      (error) => { this.on({ kind: "idleEnded", again: false }); this.o.onError?.(error); })
      .finally(() => { this.ctx.change.notify(); });
  }

  /**
   * Whether jobs of `task` may still start here soon, so that a filling batch of it waits for them: some are held
   * and not started, a claim may come (or a worker lane may be woken), and the engine is not stopping. Not while
   * every slot is taken and another task's job is the next to start (jobs start in claim order).
   */
  batchMayGrow(task: string): boolean {
    if (this.stopping()) return false;
    const { jobs } = this.ctx;
    if (this.runs.slotsTaken >= this.o.slots && (jobs.firstQueued()?.task ?? task) !== task) return false;
    const phase = this.cycle.phase;
    return this.o.policy.idles || phase === "open" || phase === "claiming" || phase === "backoff" || jobs.holdsUnstarted(task);
  }

  private dispatch(): void {
    const { jobs, budget, pace } = this.ctx;
    if (this.stopping()) {
      // A job whose start is on its way waits for the answer: denied or cancelled, it is back in the queue
      // table already, and a release would find it gone; started, it is released then (attempt refunded).
      for (const job of jobs.takeUnstarted()) this.runs.release(job);
      return;
    }
    const remaining = budget.remainingMs();
    const timeoutOf = (job: ClaimedJob) => this.o.app.tasks.get(job.task)?.timeoutMs;
    if (remaining < Math.max(longestTimeoutMs(this.o.app), CLAIM_MARGIN_MS)) this.runs.releaseUnfitting(remaining);
    // (A job that joins a filling batch takes no slot of its own.)
    while (this.runs.slotsTaken < this.o.slots || this.runs.joinsBatch(() => jobs.peekReady())) {
      const local = jobs.nextReady();
      if (!local) break;
      const { job, runBy } = local;
      if (runBy && ((!budget.monotonic && this.o.now().getTime() > runBy.clock) || performance.now() > runBy.mono)) {
        // Its token was stamped too long ago for this run to count inside the window: release it.
        this.runs.release(job);
      } else this.runs.run(job, timeoutOf(job) ?? remaining);
    }
    if (!this.settler.startPending) {
      const free = this.o.slots - this.runs.slotsTaken;
      const next = jobs.pickStarts(free + this.runs.batches.room, pace.lookahead(), free);
      if (next.length > 0) this.settler.requestStart({ ids: next.map((j) => j.id), limited: next.some((j) => j.limited) });
    }
    // A claim that came back short while bodies still ran gets one more look once everything is done:
    // those bodies (or their completions) may have enqueued more.
    if (jobs.queued === 0 && jobs.running === 0) this.on({ kind: "quiet", endedSinceClaim: this.runs.ended - this.endedAtClaim });
    if (this.cycle.phase === "open" && this.o.policy.worthClaiming(this.view())) this.claimNext();
    this.waitForWork();
  }

  /** Sends a claim (the first one, until one was answered, has the first claim's size and riders). */
  private claimNext(): void {
    const { pace, change } = this.ctx;
    this.endedAtClaim = this.runs.ended;
    const first = !this.claimedOnce;
    const view = this.view();
    // Started in the claim itself: jobs for the slots that will be free, plus those that would start within a round trip.
    const starts = view.free + Math.max(0, view.lookahead - view.queued);
    const size = first ? this.o.policy.firstSize(view) : this.o.policy.nextSize(view);
    const sent = performance.now();
    this.on({ kind: "sent" });
    this.claimToSend = this.o.policy.sendsClaimsAtOnce;
    void this.unheld.release()
      .then(() => this.claimer.claim(size, starts, first))
      .then((claim) => {
        this.claimFailures = 0;
        this.claimedOnce = true;
        pace.roundTripTook(performance.now() - sent);
        this.accept(claim, size);
      }, (error) => { this.claimFailed(error); })
      .finally(() => { change.notify(); });
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
    this.on({ kind: "failed", retry: !this.stopping() && backoff < this.o.budget.remainingMs() });
    if (this.cycle.phase !== "backoff") return;
    this.claimRetry = setTimeout(() => { this.claimRetry = undefined; this.on({ kind: "retryDue" }); this.ctx.change.notify(); }, backoff);
  }

  private accept(claim: Claim, asked: number): void {
    const { jobs } = this.ctx;
    this.summary.claimed(claim);
    this.o.onClaim?.(claim, asked);
    for (const job of claim.claimed) jobs.admit(job);
    // A short claim found everything claimable (for now); jobs the schedules enqueued or recovery requeued in
    // the same statement were invisible to it, so those call for one more claim. Sent while bodies ran, it is
    // worth one more look once they end: they may have enqueued more.
    this.on({
      kind: "answered", short: claim.claimed.length < asked, noTaskFits: claim.noTaskFits,
      more: (claim.scheduled ?? 0) > 0 || claim.recovered.length > 0 || claim.more,
      busy: jobs.running > 0 || jobs.queued > claim.claimed.length,
    });
  }
}
