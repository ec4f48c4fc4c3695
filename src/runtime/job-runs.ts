import { LeaseLost } from "../core/errors.js";
import type { ClaimedJob } from "../sql/claim.js";
import type { Outcome } from "../sql/settle.js";
import type { BudgetClock } from "./budget-clock.js";
import type { EngineOptions } from "./engine-options.js";
import { runJob } from "./execute.js";
import type { HeldJobs } from "./held-jobs.js";
import type { Pace } from "./pace.js";
import type { RunSummary } from "./run-options.js";
import { RunTimes } from "./run-times.js";
import type { Settler } from "./settler.js";
import { Latch } from "./signal.js";
import type { Unreported } from "./summary.js";

/** What a job's run needs of the engine that holds it. */
export interface JobRunsOptions {
  engine: Pick<EngineOptions, "app" | "db" | "owner" | "now" | "sqlNow" | "monotonic" | "keepSucceeded">;
  jobs: HeldJobs;
  settler: Settler;
  summary: RunSummary;
  unreported: Unreported;
  pace: Pace;
  budget: BudgetClock;
  /** Whether a claim is on its way (an outcome recorded meanwhile is kept until it is answered: held-jobs.ts). */
  claiming: () => boolean;
  /** Told once a run has ended and its outcome is on its way (or, succeeded, counted). */
  ended: () => void;
}

/**
 * The runs of an engine's jobs: a job handed to a slot runs its body (execute.ts), and its outcome goes to the
 * settler; a job that never starts goes back, attempt refunded. Each task's run times are kept, for when an
 * untimed job may still start.
 */
export class JobRuns {
  private readonly runTimes = new RunTimes();
  /** Opened once the engine stops: bodies past their timeout are not waited for after. */
  private readonly stopped = new Latch();

  constructor(private readonly o: JobRunsOptions) {}

  /** The least a run of `task` takes, as far as its runs so far tell. */
  floorMs(task: string): number {
    return this.runTimes.floorMs(task);
  }

  /** The engine stops: a body running on past its timeout no longer keeps its slot. */
  stop(): void {
    this.stopped.open();
  }

  /** Sends `outcome` to the settler. */
  push(outcome: Outcome): void {
    this.o.jobs.outcomeSent(outcome.id);
    this.o.settler.push(outcome);
  }

  /** Gives back a job that never started: queued again, attempt unspent. */
  release(job: ClaimedJob): void {
    this.o.jobs.drop(job.id);
    this.push({ id: job.id, kind: "release", attempt: job.attempt });
  }

  /** Runs `job` in a slot, for at most `timeoutMs`. */
  start(job: ClaimedJob, timeoutMs: number): void {
    const { jobs, engine: e } = this.o;
    const controller = jobs.controllerOf(job.id)!;
    if (controller.aborted) {
      this.push({ id: job.id, kind: controller.reason instanceof LeaseLost ? "release" : "cancel", attempt: job.attempt });
      jobs.drop(job.id);
      return;
    }
    jobs.bodyStarted(job.id);
    const began = performance.now();
    const ran = this.o.budget.mark();
    let lingering: Promise<unknown> | null = null;
    const ended = (outcome: Outcome | null) => {
      try {
        if (outcome === null) {
          jobs.endedForGood(job.id, this.o.claiming());
          this.o.summary.succeeded++;
          this.o.unreported.add(1);
        } else this.push(outcome);
      } finally {
        jobs.bodyEnded(job.id);
        this.o.pace.ranFor(performance.now() - began);
        this.runTimes.record(job.task, this.o.budget.elapsedMs(ran));
        this.o.ended();
      }
    };
    void runJob({ app: e.app, db: e.db, owner: e.owner, job, controller, timeoutMs, now: e.now, sqlNow: e.sqlNow,
      monotonic: e.monotonic,
      keepSucceeded: e.keepSucceeded !== false,
      lingering: (body) => { lingering = body; } })
      // A body running on past its timeout keeps its slot, its limit slot and its lease (its retry must not run
      // beside it) until it ends or the invocation does. (runJob never rejects.)
      .then((outcome) => lingering ? Promise.race([lingering.catch(() => {}), this.stopped.opened]).then(() => ended(outcome)) : ended(outcome));
  }
}
