import type { ClaimResult } from "../sql/claim/claim-answer.js";
import type { SQL } from "drizzle-orm";
import type { CompletedJob } from "../sql/settle/settle.js";
import type { StartResult } from "../sql/claim/start.js";
import type { FanOutReport } from "./fan-out-options.js";
import type { JobProblem, RunSummary } from "./run-options.js";

/** The counts a summary adds up. */
const COUNTED = ["claimed", "succeeded", "retried", "snoozed", "failed", "cancelled", "released", "recovered", "rateLimited", "abandoned", "lost", "unconfirmed", "roundTrips"] as const;
type Counted = (typeof COUNTED)[number];
type Counts = Record<Counted, number>;

const noCounts = (): Counts => ({ claimed: 0, succeeded: 0, retried: 0, snoozed: 0, failed: 0, cancelled: 0, released: 0,
  recovered: 0, rateLimited: 0, abandoned: 0, lost: 0, unconfirmed: 0, roundTrips: 0 });

/** Whether a summary counted anything but round trips (a worker lane's cycle worth telling `onInvocation`). */
export function countsAnything(s: RunSummary): boolean {
  return COUNTED.some((k) => k !== "roundTrips" && s[k] !== 0);
}

/** A summary with nothing done yet. */
export function emptySummary(id: string): RunSummary {
  return new Summary(id).take();
}

/** Runs that reached an outcome (succeeded, retried, snoozed, failed, cancelled): a retried job counts each run. */
export function jobsEnded(s: Pick<RunSummary, "succeeded" | "retried" | "snoozed" | "failed" | "cancelled">): number {
  return s.succeeded + s.retried + s.snoozed + s.failed + s.cancelled;
}

/**
 * What an engine did, counted by the summary itself: each method records one event (a claim answered, a
 * settle answered, a start answered, a statement sent...) and `take` hands over the totals as a `RunSummary`.
 * No other module writes a count. A worker lane takes one per cycle (counting starts again from zero); a
 * worker's totals are one more summary that `add`s its lanes' cycles.
 */
export class Summary {
  private counts = noCounts();
  private problems: JobProblem[] = [];
  private tooLongForBudget: string[] = [];
  private durationMs = 0;
  private fanOut: FanOutReport | undefined;
  /** Summaries added to this one (a worker's lane cycles). */
  private added = 0;

  constructor(readonly id: string) {}

  /** Jobs this summary counts as released so far. */
  get released(): number { return this.counts.released; }

  /** Runs that reached an outcome so far. */
  get jobsEnded(): number { return jobsEnded(this.counts); }

  /** How many summaries were added (`add`). */
  get cycles(): number { return this.added; }

  /** One statement sent to the database (bound: riders are handed it as their count). */
  readonly roundTrip = (): void => { this.counts.roundTrips++; };

  /** A claim's answer: jobs claimed, and those it recovered, cancelled, ended `rate_limited` or failed as too large. */
  claimed(claim: ClaimResult): void {
    const c = this.counts;
    c.claimed += claim.claimed.length;
    c.recovered += claim.recovered.length;
    c.cancelled += claim.cancelled.length;
    c.rateLimited += claim.rateLimited.length;
    c.failed += claim.tooLarge.length;
  }

  /** A start request's answer: jobs it cancelled (their cancel was requested, or they expired) and jobs their limit denied (released). */
  startAnswered(result: StartResult): void {
    this.counts.cancelled += result.stopped.length;
    this.counts.released += result.denied.length;
  }

  /**
   * A settle's answer: the jobs it moved (each failed or retried run listed with its error), of `sent` outcomes.
   * `lost`: outcomes it did not record (their run was not this engine's any more); `unsure`: an earlier try may
   * have committed unanswered, so those it did not move are unconfirmed, not lost.
   */
  settled(done: CompletedJob[], sent: number, lost: number, unsure: boolean): void {
    const c = this.counts;
    if (unsure) c.unconfirmed += sent - done.length;
    else c.lost += lost;
    for (const d of done) {
      if (d.to === "succeeded") c.succeeded++;
      else if (d.to === "failed") c.failed++;
      else if (d.to === "cancelled") c.cancelled++;
      else if (d.kind === "release") c.released++;
      else if (d.kind === "snooze") c.snoozed++;
      else c.retried++;
      if (d.error && (d.to === "failed" || (d.to === "queued" && d.kind !== "snooze"))) {
        this.problems.push({ jobId: d.id, task: d.task, queue: d.queue, attempt: d.attempt, to: d.to as "failed" | "queued", error: d.error });
      }
    }
  }

  /** A body completed its job itself (completeTx, completeBatch): succeeded, with no outcome to settle. */
  completedAlone(): void { this.counts.succeeded++; }

  /** Jobs put back after a claim whose answer was lost (unheld-jobs.ts). */
  releasedUnheld(n: number): void { this.counts.released += n; }

  /** A body outlived its timeout's grace. */
  abandoned(): void { this.counts.abandoned++; }

  /** Outcomes still unanswered at the engine's end: `lost` never recorded, `unsure` perhaps recorded. */
  unanswered(lost: number, unsure: number): void {
    this.counts.lost += lost;
    this.counts.unconfirmed += unsure;
  }

  /** The engine ended after `durationMs`; `tooLongForBudget`: the tasks its claims left out. */
  ended(durationMs: number, tooLongForBudget: string[]): void {
    this.durationMs = durationMs;
    this.tooLongForBudget = tooLongForBudget;
  }

  /** What fan-out did, and the statements it sent. */
  fannedOut(report: FanOutReport, statements: number): void {
    this.fanOut = report;
    this.counts.roundTrips += statements;
  }

  /** Adds another summary's counts (a worker lane's cycle, into the worker's totals). */
  add(other: RunSummary): void {
    for (const k of COUNTED) this.counts[k] += other[k];
    this.added++;
  }

  /** What was counted since the last `take` (or the start), as a `RunSummary`; counting starts again from zero. */
  take(): RunSummary {
    const { counts, problems } = this;
    this.counts = noCounts();
    this.problems = [];
    const { roundTrips, ...jobs } = counts;
    const taken: RunSummary = { id: this.id, ...jobs, tooLongForBudget: this.tooLongForBudget, problems, roundTrips, durationMs: this.durationMs };
    if (this.fanOut) taken.fanOut = this.fanOut;
    return taken;
  }
}

/**
 * Jobs done that no registry update has counted yet (completed alone, or by settles that did not carry the
 * registry): the next settle that carries it takes them.
 */
export class Unreported {
  private count = 0;
  private carrying = false;

  add(n: number): void { this.count += n; }

  /** The settle's extra CTEs, given the count; when it carries the registry, the count is its. */
  take(carry: (count: number) => SQL[]): SQL[] {
    const ctes = carry(this.count);
    this.carrying = ctes.length > 0;
    if (this.carrying) this.count = 0;
    return ctes;
  }

  /** What is left uncounted, now counted by the caller. */
  drain(): number {
    const n = this.count;
    this.count = 0;
    return n;
  }

  /** Told what the settle did: counted here unless its own registry update counted it. */
  settled(jobs: CompletedJob[]): void {
    if (!this.carrying) this.count += jobs.filter((j) => j.kind !== "release").length;
  }
}
