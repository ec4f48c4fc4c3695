import { LeaseLost } from "../core/errors.js";
import type { ClaimedJob } from "../sql/claim/claim-answer.js";
import type { Outcome } from "../sql/settle/settle.js";
import type { EngineContext } from "./engine-context.js";
import { runJob } from "./execute.js";
import { RunTimes } from "./run-times.js";
import type { Settler } from "./settler.js";
import type { RunTrace } from "../core/tracing.js";
import { Batches, type BatchTicket } from "./batches.js";

/** What the jobs' runs read of their engine, and count into. */
export type JobRunsContext = Pick<EngineContext, "app" | "db" | "owner" | "now" | "sqlNow" | "keepSucceeded" | "leaseMs" | "trace"
  | "budget" | "jobs" | "summary" | "unreported" | "pace" | "change" | "engine">;

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

  /** Runs that ended since the engine began (their outcome on its way, or counted). */
  ended = 0;

  constructor(private readonly o: JobRunsContext, private readonly settler: Settler) {
    this.batches = new Batches(o);
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
    const { jobs, app } = this.o;
    const needs = (job: ClaimedJob) => app.tasks.get(job.task)?.timeoutMs ?? this.runTimes.floorMs(job.task);
    for (const job of jobs.takeUnstarted((j) => needs(j) > remainingMs)) this.release(job);
  }

  /** Ends a job that never ran with `outcome` (a release: queued again, attempt unspent; or a cancel). */
  private notRun(job: ClaimedJob, kind: "release" | "cancel"): void {
    const outcome: Outcome = { id: job.id, kind, attempt: job.attempt };
    this.o.jobs.apply(job.id, { kind: "notRun", outcome });
    this.settler.push(outcome);
  }

  /** Gives back a job that never started: queued again, attempt unspent. */
  release(job: ClaimedJob): void {
    this.notRun(job, "release");
  }

  /** Runs `job` (started) in a slot, for at most `timeoutMs`. */
  run(job: ClaimedJob, timeoutMs: number): void {
    const e = this.o;
    const { jobs } = e;
    const controller = jobs.controllerOf(job.id)!;
    if (controller.aborted) return this.notRun(job, controller.reason instanceof LeaseLost ? "release" : "cancel");
    jobs.apply(job.id, { kind: "bodyBegan" });
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
          this.o.summary.completedAlone();
          this.o.unreported.add(1);
        } else this.settler.push(outcome);
      } finally {
        this.o.pace.ranFor(performance.now() - began);
        this.runTimes.record(job.task, this.o.budget.elapsedMs(ran));
        this.ended++;
        this.o.change.notify();
        if (trace !== null) endRun(trace, outcome);
      }
    };
    void runJob({ app: e.app, db: e.db, owner: e.owner, job, controller, timeoutMs, now: e.now, sqlNow: e.sqlNow,
      monotonic: this.o.budget.monotonic, trace, batch: ticket && { batches: this.batches, ticket },
      keepSucceeded: e.keepSucceeded,
      lingering: (body) => { lingering = body; } })
      // A body running on past its timeout keeps its slot, its limit slot and its lease until it ends, within
      // its grace (lingerGraceMs): its retry must not run beside it. (runJob never rejects.)
      .then((outcome) => lingering ? this.outlived(lingering, lingerGraceMs(timeoutMs, e.leaseMs)).then(() => ended(outcome)) : ended(outcome));
  }

  /** Resolves when `body` ends, or its grace has passed (then it is abandoned and counted). */
  private outlived(body: Promise<unknown>, graceMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((resolve) => { timer = setTimeout(() => { this.o.summary.abandoned(); resolve(); }, graceMs); });
    return Promise.race([body.then(() => {}, () => {}), grace]).finally(() => clearTimeout(timer));
  }
}
