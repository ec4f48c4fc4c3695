import type { Duration } from "./core/duration.js";
import { DuplicateJob, InvalidInput, isUniqueKeyViolation, uniqueKeyOfViolation } from "./core/errors.js";
import { JobIdSchema as JobId, LimitOptionsSchema, NameSchema, parseOrThrow } from "./core/validate.js";
import { runWithTransitions, transitionOf, type Hooks } from "./app/hooks.js";
import { queryJson, runAtomically, type Db } from "./db/query.js";
import type { ChangedJob, MovedJob } from "./sql/control/changed-job.js";
import { clearLimitSlotsStatement } from "./sql/limits/clear-limit-slots.js";
import { deleteLimitStatement } from "./sql/limits/delete-limit.js";
import { fillLimitSlotsStatement } from "./sql/limits/fill-limit-slots.js";
import { lockLimitTablesStatement } from "./sql/limits/lock-limit-tables.js";
import { requestCancelStatement } from "./sql/control/request-cancel.js";
import { requeueStatement } from "./sql/control/requeue.js";
import { setLimitStatement } from "./sql/limits/set-limit.js";
import { setQueuePausedStatement } from "./sql/control/set-queue-paused.js";

/** Whose transition hooks a control operation reports to: an `App` (or anything with its `hooks`). @example await requeue(db, id, app); */
export interface HooksOwner { hooks: Hooks }

/**
 * Cancels a queued job at once, or asks a running one to stop (its `job.signal` aborts at the next
 * heartbeat). True if it marked an active job; false for any other state or an unknown id. Given the
 * app, its `onTransition` hooks see a queued job's `queued -> cancelled` in the same transaction. Hooks
 * belong to the app: without it a queued job's cancel fires none; a running job's `running -> cancelled`
 * is reported either way, by the engine that stops it, to that engine's app. A workflow's live child jobs
 * (`step.runJobs`, `step.invoke`) are cancelled with it, and theirs in turn (see `cancelJobs` for many jobs).
 * @example if (!(await requestCancel(db, id, app))) console.log("job is not active");
 */
export async function requestCancel(db: Db, jobId: number, app?: HooksOwner): Promise<boolean> {
  const id = parseOrThrow(JobId, jobId, "job id");
  const { job } = await runWithTransitions(db, app?.hooks, (d) => queryJson<{ job: ChangedJob | null; moved: MovedJob[] }>(d, requestCancelStatement(id)),
    ({ job: marked, moved }) => [...(marked?.state === "cancelled" ? [transitionOf({ ...marked, from: "queued", to: marked.state })] : []),
      ...moved.map((child) => transitionOf(child))]);
  return job !== null;
}

/**
 * Moves a failed job back to `queued` in the caller's transaction; attempt, errors and args are kept
 * and `maxAttempts` grows if needed so it gets one more run. False if the job is not failed or unknown.
 * Given the app, its `onTransition` hooks see the `failed -> queued` in the same transaction.
 * @example await requeue(tx, jobId, app);
 */
export async function requeue(db: Db, jobId: number, app?: HooksOwner): Promise<boolean> {
  const id = parseOrThrow(JobId, jobId, "job id");
  let job: (ChangedJob & { clash?: string }) | null;
  try {
    job = await runWithTransitions(db, app?.hooks, (d) => queryJson<(ChangedJob & { clash?: string }) | null>(d, requeueStatement(id)),
      (requeued) => (requeued && requeued.clash === undefined ? [transitionOf({ ...requeued, from: "failed", to: requeued.state })] : []));
  } catch (error) {
    // A job with the key was enqueued between the statement's check and its update.
    if (isUniqueKeyViolation(error)) throw new DuplicateJob(uniqueKeyOfViolation(error) ?? `(the unique key of job ${id})`, { cause: error });
    throw error;
  }
  if (job?.clash !== undefined) throw new DuplicateJob(job.clash);
  return job !== null;
}

/** Stops every invocation from claiming this queue. @example await pauseQueue(db, "mail"); */
export async function pauseQueue(db: Db, queue: string): Promise<void> {
  await queryJson(db, setQueuePausedStatement(parseOrThrow(NameSchema, queue, "queue"), true));
}

/** Undoes `pauseQueue`. @example await resumeQueue(db, "mail"); */
export async function resumeQueue(db: Db, queue: string): Promise<void> {
  await queryJson(db, setQueuePausedStatement(parseOrThrow(NameSchema, queue, "queue"), false));
}

/** A limit on the jobs enqueued with a `limitKey`. @example const vendorLimit: LimitOptions = { maxStarts: 10, window: "1m" }; */
export interface LimitOptions {
  /** At most this many starts in any sliding `window` (1 to MAX_LIMIT_COUNT, 10,000). */
  maxStarts?: number | null;
  window?: Duration | null;
  /** At most this many running at once, cluster-wide (1 to MAX_LIMIT_COUNT, 10,000: each is a row). */
  maxRunning?: number | null;
}

/** The limit as stored. @example const { maxRunning }: Limit = await setLimit(db, "vendor", { maxRunning: 3 }); */
export interface Limit { key: string; maxStarts: number | null; windowMs: number | null; maxRunning: number | null }

/**
 * Sets a cluster-wide limit for jobs enqueued with this `limitKey`; fields not given keep their value,
 * `null` removes one. Jobs over the limit stay queued and are taken by a later claim. Jobs of the key
 * already running count against a new or lowered `maxRunning` (running jobs are never stopped). It
 * briefly holds off claims and completions while it counts them; called with your transaction, until
 * you commit.
 * @example
 * await setLimit(db, "vendor", { maxStarts: 10, window: "1m" });
 * await setLimit(db, "vendor", { maxRunning: 3 });
 */
export async function setLimit(db: Db, key: string, options: LimitOptions): Promise<Limit> {
  const k = parseOrThrow(NameSchema, key, "limit key");
  const o = parseOrThrow(LimitOptionsSchema, options, `limit for ${JSON.stringify(key)}`);
  if (o.maxStarts === undefined && o.window === undefined && o.maxRunning === undefined) throw new InvalidInput("nothing to set");
  const change = { maxStarts: o.maxStarts, windowMs: o.window, maxRunning: o.maxRunning };
  // One transaction (one request on neon-http): with claims held off, the slots are rebuilt from the
  // jobs running right now, so a limit set or lowered while jobs run counts them.
  const [, [limit]] = await runAtomically(db, (d) => [
    d.execute(lockLimitTablesStatement()),
    d.execute(setLimitStatement(k, change)),
    d.execute(clearLimitSlotsStatement(k)),
    d.execute(fillLimitSlotsStatement(k)),
  ]);
  return (limit as { r: Limit }).r;
}

/** Removes a limit; true if there was one. @example await deleteLimit(db, "vendor"); */
export async function deleteLimit(db: Db, key: string): Promise<boolean> {
  return queryJson<boolean>(db, deleteLimitStatement(parseOrThrow(NameSchema, key, "limit key")));
}
