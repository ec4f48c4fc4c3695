import { LeaseLost } from "../core/errors.js";
import type { ClaimedJob } from "../sql/claim/claim.js";
import type { Outcome } from "../sql/settle/settle.js";
import type { BudgetClock } from "./budget-clock.js";
import type { EngineOptions } from "./engine-options.js";
import { runJob } from "./execute.js";
import type { HeldJobs } from "./held-jobs.js";
import type { Pace } from "./pace.js";
import type { RunSummary } from "./run-options.js";
import { RunTimes } from "./run-times.js";
import { RETRY_MAX_MS, RETRY_MIN_MS } from "./retry-wait.js";
import { sleep } from "./signal.js";
import type { Settler } from "./settler.js";
import type { Unreported } from "./summary.js";
import type { RunTrace } from "../core/tracing.js";
import { Batches, type BatchTicket } from "./batches.js";

/** Tries an engine gives its unanswered outcomes at its end (at most about 1.5 s of backoff between them). */
const END_RESENDS = 5;

/** What a job's run needs of the engine that holds it. */
export interface JobRunsOptions {
  engine: Pick<EngineOptions, "app" | "db" | "owner" | "now" | "sqlNow" | "keepSucceeded" | "leaseMs" | "trace">;
  jobs: HeldJobs;
  settler: Settler;
  summary: RunSummary;
  unreported: Unreported;
  pace: Pace;
  budget: BudgetClock;
  /** Told once a run has ended and its outcome is on its way (or, succeeded, counted). */
  ended: () => void;
  /** Told when a batch gave back its slot. */
  freed: () => void;
  /** Whether the engine may still start more jobs of `task` soon: a batch of it waits for them (batches.ts). */
  mayGrow: (task: string) => boolean;
}

/** Ends a run's span with its outcome (`null`: the body completed the job itself); a tracer's failure stays its own. */
function endRun(trace: RunTrace, outcome: Outcome | null): void {
  try {
    trace.end(outcome === null ? { outcome: "completed" } : { outcome: outcome.kind, error: outcome.error ?? null });
  } catch { /* the job's outcome is recorded all the same */ }
}

/**
 * How long a body that ignores its timeout is waited for after it: its own timeout again, or the lease if that
 * is longer. Within it the body keeps its slot, its limit slot and its lease (the heartbeat renews it), and the
 * engine waits for it even past its budget; past it the timeout is recorded and a retry may start beside it.
 */
export function lingerGraceMs(timeoutMs: number, leaseMs: number): number {
  return Math.max(timeoutMs, leaseMs);
}

/**
 * The runs of an engine's jobs: a job handed to a slot runs its body (execute.ts), and its outcome goes to the
 * settler; a job that never starts goes back, attempt refunded. Each task's run times are kept, for when an
 * untimed job may still start.
 */
export class JobRuns {
  private readonly runTimes = new RunTimes();
  /** The batch tasks' batches: each holds one slot, however many jobs it gathers. */
  readonly batches: Batches;
  /** Bodies of batch tasks' jobs running: they hold no slot of their own. */
  private batchRuns = 0;

  constructor(private readonly o: JobRunsOptions) {
    this.batches = new Batches({ budget: o.budget, mayGrow: o.mayGrow, freed: o.freed });
  }

  /** Slots taken: a body each, except a batch task's jobs, whose batch takes one for all of them. */
  get slotsTaken(): number {
    return this.o.jobs.running - this.batchRuns + this.batches.slotsHeld;
  }

  /** Whether the job `next` names would start into a batch that is filling, taking no slot (`next` is read only if one is). */
  joinsBatch(next: () => ClaimedJob | undefined): boolean {
    if (!this.batches.filling) return false;
    const job = next();
    return job !== undefined && this.batches.takes(job.task);
  }

  /**
   * Gives back the held, unstarted jobs that can no longer fit in `remainingMs` (the budget only shrinks): a
   * timed job by its task's timeout, an untimed one by the least a run of its task takes, as far as its runs tell.
   */
  releaseUnfitting(remainingMs: number): void {
    const { jobs, engine } = this.o;
    const needs = (job: ClaimedJob) => engine.app.tasks.get(job.task)?.timeoutMs ?? this.runTimes.floorMs(job.task);
    for (const job of jobs.takeUnstarted((j) => needs(j) > remainingMs)) this.release(job);
  }

  /** The timer that sends unanswered outcomes again, and how many times it was set. */
  private resendTimer: ReturnType<typeof setTimeout> | undefined;
  private resends = 0;

  /** A settle of `outcomes` went unanswered: they are kept and sent again after a short backoff (the database may be back). */
  unanswered(outcomes: Outcome[], unsure: boolean): void {
    this.o.jobs.settleLost(outcomes, unsure);
    if (this.resendTimer !== undefined) return;
    const backoff = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** this.resends++);
    this.resendTimer = setTimeout(() => { this.resendTimer = undefined; this.resend(); }, backoff);
  }

  /**
   * At the engine's end: unanswered outcomes are sent again, up to END_RESENDS times with the same backoff (one try
   * was not enough: at a tenth of answers dropped, an invocation in a few hundred lost a whole settle, and its jobs,
   * run, were charged by lease recovery); those still unanswered are counted lost (or unconfirmed).
   */
  async resendAtEnd(): Promise<void> {
    for (let tries = 0; tries < END_RESENDS && this.o.jobs.unsettled > 0; tries++) {
      clearTimeout(this.resendTimer);
      this.resendTimer = undefined;
      if (tries > 0) await sleep(Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** tries));
      this.resend();
      await this.o.settler.flush();
    }
    clearTimeout(this.resendTimer);
    this.resendTimer = undefined;
    if (this.o.jobs.unsettled === 0) return;
    const { lost, unsure } = this.o.jobs.unconfirmed();
    this.o.summary.lost += lost;
    this.o.summary.unconfirmed += unsure;
  }

  private resend(): void {
    for (const outcome of this.o.jobs.resend()) this.o.settler.push(outcome);
  }

  /** Ends a job that never ran with `outcome` (a release: queued again, attempt unspent; or a cancel). */
  private notRun(job: ClaimedJob, kind: "release" | "cancel"): void {
    const outcome: Outcome = { id: job.id, kind, attempt: job.attempt };
    this.o.jobs.apply(job.id, { kind: "notRun", outcome });
    this.o.settler.push(outcome);
  }

  /** Gives back a job that never started: queued again, attempt unspent. */
  release(job: ClaimedJob): void {
    this.notRun(job, "release");
  }

  /** Runs `job` in a slot, for at most `timeoutMs`. */
  start(job: ClaimedJob, timeoutMs: number): void {
    const { jobs, engine: e } = this.o;
    const controller = jobs.controllerOf(job.id)!;
    if (controller.aborted) return this.notRun(job, controller.reason instanceof LeaseLost ? "release" : "cancel");
    jobs.apply(job.id, { kind: "bodyStarted" });
    const task = e.app.tasks.get(job.task);
    let ticket: BatchTicket | undefined;
    if (task?.batch) {
      ticket = this.batches.enter(task, job.id, timeoutMs);
      this.batchRuns++;
    }
    const began = performance.now();
    const ran = this.o.budget.mark();
    let lingering: Promise<unknown> | null = null;
    const trace = e.trace ? e.trace.run(job) : null;
    const ended = (outcome: Outcome | null) => {
      try {
        jobs.apply(job.id, { kind: "bodyEnded", outcome });
        if (ticket) {
          this.batchRuns--;
          this.batches.leave(ticket);
        }
        if (outcome === null) {
          this.o.summary.succeeded++;
          this.o.unreported.add(1);
        } else this.o.settler.push(outcome);
      } finally {
        this.o.pace.ranFor(performance.now() - began);
        this.runTimes.record(job.task, this.o.budget.elapsedMs(ran));
        this.o.ended();
        if (trace !== null) endRun(trace, outcome);
      }
    };
    void runJob({ app: e.app, db: e.db, owner: e.owner, job, controller, timeoutMs, now: e.now, sqlNow: e.sqlNow,
      monotonic: this.o.budget.monotonic, trace, batch: ticket && { batches: this.batches, ticket },
      keepSucceeded: e.keepSucceeded !== false,
      lingering: (body) => { lingering = body; } })
      // A body running on past its timeout keeps its slot, its limit slot and its lease until it ends, within
      // its grace (lingerGraceMs): its retry must not run beside it. (runJob never rejects.)
      .then((outcome) => lingering ? this.outlived(lingering, lingerGraceMs(timeoutMs, e.leaseMs)).then(() => ended(outcome)) : ended(outcome));
  }

  /** Resolves when `body` ends, or its grace has passed (then it is abandoned and counted). */
  private outlived(body: Promise<unknown>, graceMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((resolve) => { timer = setTimeout(() => { this.o.summary.abandoned++; resolve(); }, graceMs); });
    return Promise.race([body.then(() => {}, () => {}), grace]).finally(() => clearTimeout(timer));
  }
}
