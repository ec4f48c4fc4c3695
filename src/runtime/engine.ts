import type { SQL } from "drizzle-orm";
import { LeaseLost } from "../core/errors.js";
import type { App } from "../app/app.js";
import type { Db } from "../db/query.js";
import type { ClaimedJob } from "../sql/claim.js";
import type { StartResult } from "../sql/start.js";
import { Claimer, longestTimeoutMs, type Claim } from "./claimer.js";
import { Heartbeat, judgeBeat } from "./heartbeat.js";
import { runJob } from "./execute.js";
import type { RunSummary } from "./run-options.js";
import { Pace } from "./pace.js";
import { Settler } from "./settler.js";
import { countClaim, countCompleted, emptySummary, Unreported } from "./summary.js";
import { LocalQueue } from "./local-queue.js";
import { JobAbort, Latch, Wakeup } from "./signal.js";

/** What the engine is composed with: one invocation (`runOnce`) or one lane of a long-lived worker. */
export interface EngineOptions {
  app: App;
  db: Db;
  owner: string;
  queues: string[] | null;
  slots: number;
  /** Jobs one claim asks for: the invocation's batch, or the worker's prefetch. */
  batchSize: number;
  leaseMs: number;
  heartbeatMs: number;
  /** The local clock: budget, schedules, error times. */
  now: () => Date;
  /** The statement clock: the caller's, or the database's `now()`. */
  sqlNow: () => SQL;
  /** When no new job may start, on the local clock (ms), or Infinity. */
  deadline: number;
  signal?: AbortSignal;
  /**
   * Size claims to the work instead of always asking for `batchSize`: the free slots plus what would start
   * within two round trips, so quick jobs are claimed hundreds at a time and slow ones about a slot's worth
   * (a long-lived worker's `prefetch` is then the most it holds).
   */
  adaptiveBatch?: boolean;
  /** Claim again while there is work and budget; false: exactly one claim. */
  drain: boolean;
  /** CTEs for the first claim's round trip (registry, retention). */
  firstClaimExtras: SQL[];
  /** CTEs for claims after the first (a worker's retention, when due). */
  laterClaimExtras?: () => SQL[];
  /** CTEs for every settle statement that records outcomes (the workers registry), given jobs completed on their own meanwhile. */
  settleAfter: (unreported: number, final: boolean) => SQL[];
  /**
   * Called when nothing is left to run and the last claim found no more: resolve `true` to claim again
   * (a worker waiting for a wake-up or its next poll), `false` to end.
   */
  idle?: () => Promise<boolean>;
  /** A claim that failed after the first (the first one's error is thrown). */
  onError?: (error: unknown) => void;
  /** How far each claim also counts the due jobs (`Claim.backlog`), for fan-out; see ClaimerOptions.backlog. */
  backlog?: (first: boolean, batchSize: number) => number | undefined;
  /** Told of every claim's answer and the size it asked for (fan-out watches them). */
  onClaim?: (claim: Claim, asked: number) => void;
}

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
  private readonly change = new Wakeup();
  /** Resolved once the budget is spent or the signal aborted: bodies past their timeout are not waited for after. */
  private readonly stopped = new Latch();
  private readonly queue = new LocalQueue();
  /** Every job this engine holds a lease on (queued locally or running), with the controller its body gets. */
  private readonly held = new Map<number, JobAbort>();
  private readonly mustStop = new Set<number>();
  private running = 0;
  private claiming: Promise<void> | null = null;
  private exhausted = false;
  /** Jobs that ended since the last claim: their bodies may have enqueued more, worth one more look. */
  private endedSinceClaim = 0;
  private idling = false;
  private noTaskFits = false;
  private lookAgain = false;
  private ended = false;
  private readonly unreported = new Unreported();
  /** Moving averages that size how many jobs to start ahead of free slots. */
  private readonly pace: Pace;

  constructor(private readonly o: EngineOptions) {
    this.summary = emptySummary(o.owner);
    this.pace = new Pace(o.app, o.slots, o.batchSize);
    this.claimer = new Claimer({
      app: o.app, db: o.db, owner: o.owner, leaseMs: o.leaseMs, queues: o.queues, sqlNow: o.sqlNow, now: o.now,
      remainingMs: () => this.remainingMs(), count: () => { this.summary.roundTrips++; },
      roundTripMs: () => this.pace.roundTripMs, backlog: o.backlog,
    });
    this.settler = new Settler({
      db: o.db, hooks: o.app.hooks, owner: o.owner, sqlNow: o.sqlNow, now: o.now,
      after: () => this.unreported.take((n) => o.settleAfter(n, this.running === 0 && this.queue.length === 0)),
      sent: (ms) => { this.summary.roundTrips++; this.pace.roundTripTook(ms); },
      done: (jobs, sent) => { this.summary.lost += sent.length - jobs.length; countCompleted(this.summary, jobs); this.unreported.settled(jobs); },
      lost: (outcomes) => { this.summary.lost += outcomes.length; },
      started: (request, result, sent) => this.onStarted(request.ids, result, sent),
    });
    this.heartbeat = new Heartbeat({
      db: o.db, owner: o.owner, leaseMs: o.leaseMs, now: o.sqlNow, intervalMs: o.heartbeatMs,
      held: () => [...this.held.keys()],
      count: () => { this.summary.roundTrips++; },
      onBeat: (covered, held) => this.onBeat(covered, held),
    });
  }

  /** Runs until the budget is spent, the work is done (and `idle` says stop) or `signal` aborts; never rejects once a body runs. */
  async run(): Promise<RunSummary> {
    const began = this.o.now().getTime();
    this.heartbeat.start();
    // Look again when the budget ends or the signal aborts, even if nothing else happens then.
    const atDeadline = Number.isFinite(this.remainingMs()) ? setTimeout(() => this.change.notify(), Math.max(0, this.remainingMs()) + 1) : undefined;
    const onAbort = () => this.change.notify();
    this.o.signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const sent = performance.now();
      // A worker lane that knows nothing of its jobs' pace yet takes a few slots' worth: quick jobs then start
      // ahead from the first statement on, and slow ones are held, not started.
      const firstSize = this.o.adaptiveBatch ? Math.max(this.adaptiveSize(), Math.min(this.o.batchSize, 4 * this.o.slots)) : this.o.batchSize;
      const first = await this.claimer.claim(firstSize, this.o.slots + this.pace.lookahead(), this.o.firstClaimExtras);
      this.pace.roundTripTook(performance.now() - sent);
      this.accept(first, firstSize);
      await this.loop();
    } finally {
      clearTimeout(atDeadline);
      this.o.signal?.removeEventListener("abort", onAbort);
      this.heartbeat.stop();
      await this.settler.flush();
      await this.claimer.finished();
      this.pace.save();
      this.summary.tooLongForBudget = this.claimer.tooLongForBudget ?? [];
      this.summary.durationMs = this.o.now().getTime() - began;
    }
    return this.summary;
  }

  /** A worker lane's claims are sized to the work: the slots plus what would start within two round trips, at most its prefetch. */
  private adaptiveSize(): number {
    return Math.min(this.o.batchSize, this.o.slots + 2 * this.pace.lookahead());
  }

  private remainingMs(): number {
    return this.o.deadline - this.o.now().getTime();
  }

  private stopping(): boolean {
    return this.o.signal?.aborted === true || this.remainingMs() <= 0;
  }

  private async loop(): Promise<void> {
    for (;;) {
      this.dispatch();
      const quiet = this.running === 0 && this.queue.length === 0 && !this.claiming && !this.settler.startPending;
      if (quiet && (!this.o.idle || this.ended || this.stopping())) return;
      await this.change.wait();
    }
  }

  /** A worker lane waits for a wake-up or its next poll whenever its claims ran dry, even while other slots run. */
  private waitForWork(): void {
    if (!this.o.idle || this.idling || this.ended || this.stopping()) return;
    this.idling = true;
    this.o.idle().then((again) => { if (again) this.exhausted = false; else this.ended = true; },
      (error) => { this.ended = true; this.o.onError?.(error); })
      .finally(() => { this.idling = false; this.change.notify(); });
  }

  private dispatch(): void {
    if (this.stopping()) {
      this.stopped.open();
      for (const local of this.queue.takeAll()) this.release(local.job);
      return;
    }
    const remaining = this.remainingMs();
    const timeoutOf = (job: ClaimedJob) => this.o.app.tasks.get(job.task)?.timeoutMs;
    if (remaining < longestTimeoutMs(this.o.app)) {
      // Jobs that can never fit any more (the remaining budget only shrinks) are released.
      for (const { job } of this.queue.removeWhere((l) => (timeoutOf(l.job) ?? -Infinity) > remaining)) this.release(job);
    }
    while (this.running < this.o.slots) {
      const local = this.queue.takeReady();
      if (!local) break;
      const { job, startBy } = local;
      if (startBy && (this.o.now().getTime() > startBy.clock || performance.now() > startBy.mono)) {
        // Its token was stamped too long ago for this start to count inside the window: release it.
        this.release(job);
      } else this.start(job, timeoutOf(job) ?? remaining);
    }
    if (!this.settler.startPending) {
      const next = this.queue.pickStarts(this.o.slots - this.running, this.pace.lookahead());
      if (next.length > 0) this.settler.requestStart({ ids: next.map((l) => l.job.id), limited: next.some((l) => l.job.limited) });
    }
    // A claim that came back short while bodies still ran gets one more look once everything is done:
    // those bodies (or their completions) may have enqueued more.
    if (this.exhausted && !this.o.idle && this.o.drain && !this.claiming && this.queue.length === 0 && this.running === 0
      && this.lookAgain && this.endedSinceClaim > 0 && !this.noTaskFits) this.exhausted = false;
    // A worker lane with quick jobs (claims larger than twice its slots) claims once it has room for half a
    // claim: a claim for the few jobs short of its prefetch costs nearly as much as a whole one.
    const full = this.adaptiveSize();
    const room = !this.o.adaptiveBatch || full <= 2 * this.o.slots || this.queue.length <= full / 2;
    if (room && !this.claiming && !this.exhausted && this.o.drain && this.queue.length <= this.o.slots + this.pace.lookahead()) this.claimNext();
    if (this.exhausted && !this.claiming) this.waitForWork();
  }

  private claimNext(): void {
    this.endedSinceClaim = 0;
    // Started in the claim itself: jobs for the slots that will be free, plus those that would start within a round trip.
    const starts = Math.max(0, this.o.slots - this.running - this.queue.length) + Math.max(0, this.pace.lookahead() - this.queue.length);
    // An invocation asks for a whole batch each time (small top-up claims cost nearly as much as whole ones);
    // a worker lane holds at most its prefetch.
    const size = this.o.adaptiveBatch ? Math.max(1, this.adaptiveSize() - this.queue.length) : this.o.batchSize;
    const sent = performance.now();
    this.claiming = this.claimer.claim(size, starts, this.o.laterClaimExtras?.() ?? [])
      .then((claim) => { this.pace.roundTripTook(performance.now() - sent); this.accept(claim, size); },
        (error) => { this.exhausted = true; this.o.onError?.(error); })
      .finally(() => { this.claiming = null; this.change.notify(); });
  }

  private accept(claim: Claim, asked: number): void {
    countClaim(this.summary, claim);
    this.o.onClaim?.(claim, asked);
    for (const job of claim.claimed) {
      this.held.set(job.id, new JobAbort());
      this.queue.push(job, job.started ? "ready" : "waiting");
    }
    // A short claim found everything claimable (for now); jobs the schedules enqueued or recovery requeued in
    // the same statement were invisible to it, so those call for one more claim.
    const more = (claim.scheduled ?? 0) > 0 || claim.recovered.length > 0 || claim.more;
    if (claim.noTaskFits) this.noTaskFits = true;
    if (!this.o.drain || claim.noTaskFits || (claim.claimed.length < asked && !more)) {
      this.exhausted = true;
      // Sent while bodies ran: they may enqueue more before they end, worth one more look then.
      this.lookAgain = this.running > 0 || this.queue.length > claim.claimed.length;
    }
  }

  private onStarted(ids: number[], result: StartResult | null, sent: { clock: number; mono: number }): void {
    const startBy = (id: number) => {
      const slack = result?.slack?.[String(id)];
      return slack === undefined ? undefined : { clock: sent.clock + Number(slack), mono: sent.mono + Number(slack) };
    };
    // Stopped, denied a limit, or not ours any more; a failed request leaves it to lease expiry (never started: no attempt spent).
    for (const local of this.queue.answerStarts(ids, new Set(result?.started ?? []), startBy)) this.held.delete(local.job.id);
    if (result) {
      this.summary.cancelled += result.stopped.length;
      this.summary.released += result.denied.length;
    }
    this.change.notify();
  }

  private start(job: ClaimedJob, timeoutMs: number): void {
    const controller = this.held.get(job.id)!;
    if (this.mustStop.has(job.id) || controller.aborted) {
      this.settler.push({ id: job.id, kind: controller.reason instanceof LeaseLost ? "release" : "cancel", attempt: job.attempt });
      this.held.delete(job.id);
      return;
    }
    this.running++;
    const began = performance.now();
    let lingering: Promise<unknown> | null = null;
    void runJob({ app: this.o.app, db: this.o.db, owner: this.o.owner, job, controller, timeoutMs, now: this.o.now, sqlNow: this.o.sqlNow,
      lingering: (body) => { lingering = body; } })
      .then(async (outcome) => {
        // A body running on past its timeout keeps its slot, its limit slot and its lease (its retry must not run
        // beside it) until it ends or the invocation does.
        if (lingering) await Promise.race([lingering.catch(() => {}), this.stopped.opened]);
        this.held.delete(job.id);
        if (outcome === null) {
          this.summary.succeeded++;
          this.unreported.add(1);
        } else this.settler.push(outcome);
      })
      .finally(() => {
        this.running--;
        this.endedSinceClaim++;
        this.pace.ranFor(performance.now() - began);
        this.change.notify();
      });
  }

  private release(job: ClaimedJob): void {
    this.held.delete(job.id);
    this.settler.push({ id: job.id, kind: "release", attempt: job.attempt });
  }

  private onBeat(covered: number[], held: { id: number; stop: boolean }[]): void {
    judgeBeat(covered, held, this.held, this.mustStop);
    this.change.notify();
  }
}
