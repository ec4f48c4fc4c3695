import type { SQL } from "drizzle-orm";
import { parseDuration } from "../core/duration.js";
import { AkadzeError, Cancel, LeaseLost } from "../core/errors.js";
import type { App } from "../app/app.js";
import { emitTransitions, type Transition } from "../app/hooks.js";
import { isNeonHttp, queryJson, type Db } from "../db/driver.js";
import { claimJobsStatement, type ClaimedJob, type ClaimResult, type SideTransition } from "../sql/claim.js";
import { completeJobsStatement, type CompletedJob, type Outcome } from "../sql/complete.js";
import { scheduleClaimParts } from "../schedules/enqueue.js";
import { resolveRetention, retentionCtes, type RetentionPlan } from "../ops/retention.js";
import { invocationDoneCte, invocationSeenCte } from "../ops/workers.js";
import { CurrentJob } from "./context.js";
import { CLAIM_MARGIN_MS, DEFAULT_BATCH_SIZE, DEFAULT_BUDGET, DEFAULT_LEASE, DEFAULT_SLOTS, type RunOnceOptions, type RunSummary } from "./run-options.js";
import { executeJob } from "./execute.js";
import { Heartbeat } from "./heartbeat.js";

export * from "./run-options.js";

/** Tries to record a batch of outcomes before leaving them to lease expiry. */
const COMPLETE_TRIES = 3;

/**
 * One serverless invocation: recover expired leases and claim a batch in one statement, run it with
 * `slots` concurrency inside the budget, complete it in bulk, and return a summary.
 * @example const summary = await runOnce(app, { db, queues: ["mail"], slots: 8, batchSize: 50, budget: "25s" });
 */
export async function runOnce(app: App, options: RunOnceOptions): Promise<RunSummary> {
  return new Invocation(app, options).run();
}

class Invocation {
  private readonly db: Db;
  private readonly id: string;
  private readonly now: () => Date;
  private readonly leaseMs: number;
  private readonly deadline: number;
  private readonly started: number;
  private readonly summary: RunSummary;
  private pending: Outcome[] = [];
  private flushing: Promise<void> | null = null;
  private flushError: unknown;
  private readonly controllers = new Map<number, AbortController>();
  private readonly mustStop = new Set<number>();
  private readonly retention: RetentionPlan | null;
  /** Jobs completed by completeTx/completeBatch, not yet counted in the workers registry. */
  private completedAlone = 0;

  constructor(private readonly app: App, private readonly options: RunOnceOptions) {
    this.db = options.db;
    this.id = options.id ?? `inv-${crypto.randomUUID()}`;
    this.now = options.now ?? app.clock;
    this.leaseMs = parseDuration(options.lease ?? DEFAULT_LEASE, "lease");
    const budget = options.budget === Infinity ? Infinity : parseDuration(options.budget ?? DEFAULT_BUDGET, "budget");
    this.started = this.now().getTime();
    this.deadline = this.started + budget;
    this.retention = resolveRetention(options.retention);
    this.summary = { id: this.id, claimed: 0, succeeded: 0, retried: 0, snoozed: 0, failed: 0, cancelled: 0, released: 0,
      recovered: 0, lost: 0, tooLongForBudget: [], problems: [], roundTrips: 0, durationMs: 0 };
  }

  async run(): Promise<RunSummary> {
    const claim = await this.claim();
    if (claim.claimed.length > 0) await this.runBatch(claim.claimed);
    this.summary.durationMs = this.now().getTime() - this.started;
    if (this.flushError !== undefined) {
      throw new AkadzeError(`invocation ${this.id} could not record some outcomes; their leases will expire and another invocation recovers them`, { cause: this.flushError });
    }
    return this.summary;
  }

  private remainingMs(): number {
    return this.deadline - this.now().getTime();
  }

  private async claim(): Promise<ClaimResult> {
    const batchSize = this.options.batchSize ?? DEFAULT_BATCH_SIZE;
    const now = this.now();
    const schedules = scheduleClaimParts(this.app, now);
    const claim = await this.claimBatch(now, batchSize, { extra: [...this.claimExtras(now), ...schedules.extra], report: schedules.report });
    // Jobs the schedules enqueued in that statement were invisible to its claim: take them now if the batch has room.
    if ((claim.scheduled ?? 0) > 0 && claim.claimed.length < batchSize) {
      const more = await this.claimBatch(this.now(), batchSize - claim.claimed.length, { extra: [], report: {} });
      claim.claimed.push(...more.claimed);
      claim.recovered.push(...more.recovered);
      claim.cancelled.push(...more.cancelled);
    }
    this.summary.claimed = claim.claimed.length;
    this.summary.recovered = claim.recovered.length;
    this.summary.cancelled += claim.cancelled.length;
    return claim;
  }

  private async claimBatch(now: Date, batchSize: number, parts: { extra: SQL[]; report: Record<string, SQL> }): Promise<ClaimResult> {
    const remaining = this.remainingMs();
    // Only tasks whose declared timeout fits in the budget are worth claiming.
    const fits = (t: { timeoutMs: number | undefined }) => t.timeoutMs === undefined || t.timeoutMs <= remaining - CLAIM_MARGIN_MS;
    const all = [...this.app.tasks.values()];
    const tasks = all.filter(fits).map((t) => t.name);
    if (this.summary.roundTrips === 0) this.summary.tooLongForBudget = all.filter((t) => !fits(t)).map((t) => t.name);
    const statement = claimJobsStatement({
      owner: this.id, now, leaseMs: this.leaseMs, batchSize, tasks, queues: this.options.queues ?? null, ...parts,
    });
    const claim = await this.send((db) => queryJson<ClaimResult>(db, statement), (result) => [
      ...result.recovered.map(sideTransition), ...result.cancelled.map(sideTransition),
      ...result.claimed.map((j): Transition => ({ jobId: j.id, task: j.task, queue: j.queue, from: "queued", to: "running", attempt: j.attempt })),
    ]);
    claim.claimed = claim.claimed.map((j) => ({ ...j, id: Number(j.id) }));
    return claim;
  }

  /** Registry and retention ride along with the first claim: no extra round trip. */
  private claimExtras(now: Date): SQL[] {
    const extras: SQL[] = [];
    if (this.options.register !== false) extras.push(invocationSeenCte(this.id, this.options.queues ?? null, now));
    if (this.retention) extras.push(...retentionCtes(this.retention, now));
    return extras;
  }

  /** Claims up to `count` more jobs for free slots (refill mode); schedules ride along, as in the first claim. */
  private async claimMore(count: number): Promise<ClaimedJob[]> {
    const now = this.now();
    const schedules = scheduleClaimParts(this.app, now);
    const more = await this.claimBatch(now, count, schedules);
    this.summary.claimed += more.claimed.length;
    this.summary.recovered += more.recovered.length;
    this.summary.cancelled += more.cancelled.length;
    for (const job of more.claimed) this.controllers.set(job.id, new AbortController());
    return more.claimed;
  }

  private async runBatch(jobs: ClaimedJob[]): Promise<void> {
    for (const job of jobs) this.controllers.set(job.id, new AbortController());
    const heartbeat = new Heartbeat({
      db: this.db, owner: this.id, leaseMs: this.leaseMs, now: this.now,
      intervalMs: this.options.heartbeat === undefined ? this.leaseMs / 3 : parseDuration(this.options.heartbeat, "heartbeat"),
      count: () => { this.summary.roundTrips++; },
      onBeat: (held) => this.onHeartbeat(held),
    });
    heartbeat.start();
    try {
      const queue = [...jobs];
      const refill = this.options.refill === true;
      const slots = Math.max(1, refill ? this.options.slots ?? DEFAULT_SLOTS : Math.min(this.options.slots ?? DEFAULT_SLOTS, queue.length));
      let busy = 0;
      let exhausted = false;
      let claiming: Promise<void> | null = null;
      // One claim at a time, sized to the slots free when it is sent; slots that free meanwhile wait for it.
      const claimForFreeSlots = () => (claiming ??= (async () => {
        const free = slots - busy - queue.length;
        if (free <= 0) return;
        // A failed refill ends the refilling, not the invocation: the jobs it holds still run and complete.
        const more = await this.claimMore(free).catch(() => []);
        if (more.length === 0) exhausted = true;
        queue.push(...more);
      })().finally(() => { claiming = null; }));
      await Promise.all(Array.from({ length: slots }, async () => {
        for (;;) {
          let job = queue.shift();
          while (!job && refill && !exhausted && !this.options.signal?.aborted) {
            await claimForFreeSlots();
            job = queue.shift();
          }
          if (!job) return;
          busy++;
          try { this.record(await this.runOne(job)); } finally { busy--; }
        }
      }));
    } finally {
      heartbeat.stop();
    }
    await this.flush();
  }

  private async runOne(job: ClaimedJob): Promise<Outcome | null> {
    const task = this.app.tasks.get(job.task)!;
    const remaining = this.remainingMs();
    const timeoutMs = task.timeoutMs ?? remaining;
    const controller = this.controllers.get(job.id)!;
    if (this.options.signal?.aborted || this.mustStop.has(job.id) || controller.signal.aborted || timeoutMs > remaining || remaining <= 0) {
      return { id: job.id, kind: "release" };
    }
    const current = new CurrentJob(job.id, {
      db: this.db, owner: this.id, now: this.now, hooks: this.app.hooks, task: job.task, queue: job.queue, attempt: job.attempt,
    });
    const outcome = await executeJob({ job, task, hooks: this.app.hooks, controller, current, timeoutMs, now: this.now });
    if (outcome === null) {
      this.controllers.delete(job.id);
      this.summary.succeeded++;
      this.completedAlone++;
    }
    return outcome;
  }

  private onHeartbeat(held: { id: number; stop: boolean }[]): void {
    const seen = new Map(held.map((h) => [h.id, h.stop]));
    for (const [id, controller] of this.controllers) {
      if (!seen.has(id)) controller.abort(new LeaseLost(`the lease of job ${id} was lost to another invocation`));
      else if (seen.get(id)) {
        this.mustStop.add(id);
        controller.abort(new Cancel(`job ${id} was cancelled or expired while running`));
      }
    }
  }

  private record(outcome: Outcome | null): void {
    if (outcome === null) return; // completeTx/completeBatch recorded it; counted in runOne
    this.pending.push(outcome);
    // Wait one macrotask first, so every job that finishes in the same turn shares one statement.
    if (!this.flushing) this.flushing = nextTurn().then(() => this.drain()).finally(() => { this.flushing = null; });
  }

  private async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.pending.length > 0) await this.drain();
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const outcomes = this.pending.splice(0);
      for (const o of outcomes) this.controllers.delete(o.id);
      await this.complete(outcomes);
    }
  }

  private async complete(outcomes: Outcome[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const now = this.now();
        const alone = this.completedAlone;
        const statement = completeJobsStatement(this.id, now, outcomes,
          this.options.register !== false ? [invocationDoneCte(this.id, now, alone)] : []);
        const { done } = await this.send((db) => queryJson<{ done: CompletedJob[] }>(db, statement),
          (result) => result.done.map((d): Transition => ({
            jobId: Number(d.id), task: d.task, queue: d.queue, from: "running", to: d.to as Transition["to"], attempt: d.attempt,
            ...(d.error ? { error: d.error } : {}),
          })));
        this.completedAlone -= alone;
        this.count(outcomes, done);
        return;
      } catch (error) {
        // A repeated completion is harmless: it only applies where this invocation still holds the lease.
        if (attempt >= COMPLETE_TRIES) { this.flushError = error; this.summary.lost += outcomes.length; return; }
      }
    }
  }

  private count(outcomes: Outcome[], done: CompletedJob[]): void {
    const s = this.summary;
    s.lost += outcomes.length - done.length;
    for (const d of done) {
      if (d.error && (d.to === "failed" || (d.to === "queued" && d.kind !== "snooze" && d.kind !== "release"))) {
        s.problems.push({ jobId: Number(d.id), task: d.task, queue: d.queue, attempt: d.attempt, to: d.to, error: { kind: d.error.kind, message: d.error.message } });
      }
      if (d.to === "succeeded") s.succeeded++;
      else if (d.to === "failed") s.failed++;
      else if (d.to === "cancelled") s.cancelled++;
      else if (d.kind === "release") s.released++;
      else if (d.kind === "snooze") s.snoozed++;
      else s.retried++;
    }
  }

  /**
   * Sends one statement; with transition hooks registered it runs in a transaction so the hooks see
   * the change in its transaction (on neon-http, right after it commits).
   */
  private async send<T>(run: (db: Db) => Promise<T>, transitions: (result: T) => Transition[]): Promise<T> {
    this.summary.roundTrips++;
    const hooks = this.app.hooks;
    if (hooks.transition.length === 0) return run(this.db);
    if (isNeonHttp(this.db)) {
      const result = await run(this.db);
      await emitTransitions(hooks, transitions(result), this.db);
      return result;
    }
    return this.db.transaction(async (tx) => {
      const result = await run(tx as unknown as Db);
      await emitTransitions(hooks, transitions(result), tx as unknown as Db);
      return result;
    });
  }
}

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

function sideTransition(t: SideTransition): Transition {
  return { jobId: Number(t.id), task: t.task, queue: t.queue, from: t.from as Transition["from"], to: t.to as Transition["to"], attempt: t.attempt };
}
