// What a test app's drain adds up, and the sentence it ends with when the runs never stop.
import { AkadzeError } from "../core/errors.js";
import { queryJson, type Db } from "../db/query.js";
import type { JobProblem, RunSummary } from "../runtime/run-options.js";
import { jobsSinceStatement } from "../sql/reads/jobs-since.js";
import { timestamp } from "../sql/time.js";

/** The runs a drain makes at most unless told: enough for thousands of jobs, few enough that a loop ends in seconds. @example await t.drain({ maxRuns: DEFAULT_MAX_RUNS * 10 }) */
export const DEFAULT_MAX_RUNS = 100;

/** What `drain` or `runUntilIdle` did, added up over its runs. @example const { succeeded, problems } = await t.drain(); */
export interface DrainSummary {
  /** Invocations (`runOnce`, one batch each) that claimed jobs. */
  runs: number;
  claimed: number;
  succeeded: number;
  /** Runs that failed and will retry (after their backoff: advance the clock to run them). */
  retried: number;
  /** Runs that snoozed, and workflow runs that parked (a sleep, an event wait, a step's backoff). */
  snoozed: number;
  failed: number;
  cancelled: number;
  rateLimited: number;
  /** Every run that failed or will retry, with its error. */
  problems: JobProblem[];
  /** How far the clock was moved (`runUntilIdle`; 0 for `drain`), in ms. */
  advancedMs: number;
}

export function emptyDrainSummary(): DrainSummary {
  return { runs: 0, claimed: 0, succeeded: 0, retried: 0, snoozed: 0, failed: 0, cancelled: 0, rateLimited: 0, problems: [], advancedMs: 0 };
}

/** Adds one invocation's summary to the total. */
export function addRun(total: DrainSummary, run: RunSummary): void {
  if (run.claimed > 0) total.runs++;
  total.claimed += run.claimed;
  total.succeeded += run.succeeded;
  total.retried += run.retried;
  total.snoozed += run.snoozed;
  total.failed += run.failed;
  total.cancelled += run.cancelled;
  total.rateLimited += run.rateLimited;
  total.problems.push(...run.problems);
}

/** Per task, what was enqueued since the drain began and what is still queued. */
interface TaskCount { task: string; enqueued: number; queued: number; due: number }

/**
 * The error of a drain that made `maxRuns` runs and still found work: it names the tasks whose jobs kept
 * coming (a task that enqueues itself, a workflow that never stops sleeping), with their counts.
 */
export async function endlessRunsError(db: Db, what: string, maxRuns: number, mark: number, now: Date): Promise<AkadzeError> {
  const counts = await queryJson<TaskCount[]>(db, jobsSinceStatement(mark, timestamp(now)));
  const named = counts.filter((c) => c.enqueued > 0 || c.queued > 0).slice(0, 5)
    .map((c) => `${JSON.stringify(c.task)} (${c.enqueued} enqueued since it began, ${c.queued} queued, ${c.due} due now)`);
  return new AkadzeError(`${what}: jobs were still coming after ${maxRuns} runs (maxRuns): ${named.join(", ") || "no task named"}. ` +
    "A task that enqueues itself (or a workflow that never ends) keeps it going: end the loop, or give a larger maxRuns if the work is that large");
}
