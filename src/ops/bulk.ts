import type { App } from "../app/app.js";
import { runWithTransitions, transitionOf } from "../app/hooks.js";
import { DuplicateJob, isUniqueKeyViolation, uniqueKeyOfViolation } from "../core/errors.js";
import { queryJson, type Db } from "../db/query.js";
import { cancelJobsStatement } from "../sql/control/cancel-jobs.js";
import type { MovedJob } from "../sql/control/changed-job.js";
import { requeueJobsStatement } from "../sql/control/requeue-jobs.js";
import { timestamp } from "../sql/time.js";
import { parseSelection, type BulkOptions, type JobSelection } from "./job-selection.js";

/** Options of `cancelJobs` and `requeueJobs`. @example await requeueJobs(db, { task: "mail.send" }, { app, dryRun: true }); */
export interface BulkControlOptions extends BulkOptions {
  /** The app whose `onTransition` hooks see each change (in its transaction), and whose clock measures ages. */
  app?: App;
}

interface BulkChange { count: number | string; moved: MovedJob[] }

/**
 * Cancels the queued and running jobs the selection takes (at most `limit`, default and most 10,000, oldest
 * first) in one statement: queued ones at once, running ones are asked to stop (their `job.signal` aborts at
 * the next heartbeat; one already asked is not taken again). A workflow's live child jobs are cancelled with
 * it. Returns how many jobs it cancelled or asked to stop, children included; `dryRun` says how many it would,
 * changing nothing. A job that a claim or settle holds at that instant is skipped: call again to catch it.
 * @example
 * const would = await cancelJobs(db, { task: "mail.send", state: "queued", args: { userId: 7 } }, { dryRun: true });
 * await cancelJobs(db, { queue: "imports", olderThan: "1h" }, { app });
 */
export async function cancelJobs(db: Db, selection: JobSelection, options: BulkControlOptions = {}): Promise<number> {
  const { app, ...rest } = options;
  const p = parseSelection(selection, rest, "cancelJobs", ["queued", "running"], app?.sqlClock?.() ?? null);
  const change = await runWithTransitions(db, p.dryRun ? undefined : app?.hooks,
    (d) => queryJson<BulkChange>(d, cancelJobsStatement(p.selection, timestamp(p.now), p.dryRun)), (c) => c.moved.map((m) => transitionOf(m)));
  return Number(change.count);
}

/**
 * Moves the failed jobs the selection takes (at most `limit`, oldest first) back to `queued`, as `requeue`
 * does one: attempt, errors and args kept, `maxAttempts` grown so each gets one more run. A job whose unique
 * key an active job holds stays failed (and of several failed jobs sharing a key, only the newest moves).
 * Returns how many it requeued; `dryRun` says how many it would, changing nothing.
 * @example await requeueJobs(db, { task: "mail.send", newerThan: "1d" }, { app });
 */
export async function requeueJobs(db: Db, selection: JobSelection, options: BulkControlOptions = {}): Promise<number> {
  const { app, ...rest } = options;
  const p = parseSelection(selection, rest, "requeueJobs", ["failed"], app?.sqlClock?.() ?? null);
  const change = await withDuplicateJob(() => runWithTransitions(db, p.dryRun ? undefined : app?.hooks,
    (d) => queryJson<BulkChange>(d, requeueJobsStatement(p.selection, p.dryRun)), (c) => c.moved.map((m) => transitionOf(m))));
  return Number(change.count);
}

/** Runs an operation that makes jobs active; a unique key taken meanwhile by an enqueue is a DuplicateJob naming it. */
export async function withDuplicateJob<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    // A job with the key was enqueued between the statement's check and its insert.
    if (isUniqueKeyViolation(error)) throw new DuplicateJob(uniqueKeyOfViolation(error) ?? "(a unique key)", { cause: error });
    throw error;
  }
}
