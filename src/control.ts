import * as v from "valibot";
import { DurationSchema, type Duration } from "./core/duration.js";
import { DuplicateJob, InvalidInput, isUniqueKeyViolation, uniqueKeyOfViolation } from "./core/errors.js";
import { JobIdSchema as JobId, parseOrThrow } from "./app/options.js";
import { queryJson, runAtomically, type Db } from "./db/driver.js";
import { requestCancelStatement, requeueStatement, setQueuePausedStatement } from "./sql/control.js";
import {
  clearLimitSlotsStatement, deleteLimitStatement, fillLimitSlotsStatement, lockLimitTablesStatement, setLimitStatement,
} from "./sql/limits.js";

const QueueName = v.pipe(v.string(), v.minLength(1, "a queue name must not be empty"));
const LimitKey = v.pipe(v.string(), v.minLength(1, "a limit key must not be empty"));

/**
 * Cancels a queued job at once, or asks a running one to stop (its `job.signal` aborts at the next
 * heartbeat). True if it marked an active job; false for any other state or an unknown id.
 * @example if (!(await requestCancel(db, id))) console.log("job is not active");
 */
export async function requestCancel(db: Db, jobId: number): Promise<boolean> {
  const id = parseOrThrow(JobId, jobId, "job id");
  return (await queryJson<number | null>(db, requestCancelStatement(id))) !== null;
}

/**
 * Moves a failed job back to `queued` in the caller's transaction; attempt, errors and args are kept
 * and `maxAttempts` grows if needed so it gets one more run. False if the job is not failed or unknown.
 * @example await requeue(tx, jobId);
 */
export async function requeue(db: Db, jobId: number): Promise<boolean> {
  const id = parseOrThrow(JobId, jobId, "job id");
  let outcome: { id: number | null; clash: string | null };
  try {
    outcome = await queryJson(db, requeueStatement(id));
  } catch (error) {
    // A job with the key was enqueued between the statement's check and its update.
    if (isUniqueKeyViolation(error)) throw new DuplicateJob(uniqueKeyOfViolation(error) ?? `(the unique key of job ${id})`, { cause: error });
    throw error;
  }
  if (outcome.clash !== null) throw new DuplicateJob(outcome.clash);
  return outcome.id !== null;
}

/** Stops every invocation from claiming this queue. @example await pauseQueue(db, "mail"); */
export async function pauseQueue(db: Db, queue: string): Promise<void> {
  await queryJson(db, setQueuePausedStatement(parseOrThrow(QueueName, queue, "queue"), true));
}

/** Undoes `pauseQueue`. @example await resumeQueue(db, "mail"); */
export async function resumeQueue(db: Db, queue: string): Promise<void> {
  await queryJson(db, setQueuePausedStatement(parseOrThrow(QueueName, queue, "queue"), false));
}

/** A limit on the jobs enqueued with a `limitKey`. @example const vendorLimit: LimitOptions = { maxStarts: 10, window: "1m" }; */
export interface LimitOptions {
  /** At most this many starts in any sliding `window`. */
  maxStarts?: number | null;
  window?: Duration | null;
  /** At most this many running at once, cluster-wide. */
  maxRunning?: number | null;
}

const PositiveInt = (what: string) => v.pipe(v.number(), v.integer(`${what} must be an integer`), v.minValue(1, `${what} must be at least 1`));
const LimitOptionsSchema = v.pipe(
  v.strictObject({
    maxStarts: v.optional(v.nullable(PositiveInt("maxStarts"))),
    window: v.optional(v.nullable(v.pipe(DurationSchema, v.minValue(1, "window must be longer than zero")))),
    maxRunning: v.optional(v.nullable(PositiveInt("maxRunning"))),
  }),
  v.check((o) => o.maxStarts !== undefined || o.maxRunning !== undefined || o.window !== undefined, "give maxStarts with window, or maxRunning"),
  v.check((o) => (o.maxStarts == null) === (o.window == null), "maxStarts and window go together"),
);

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
  const k = parseOrThrow(LimitKey, key, "limit key");
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
  return queryJson<boolean>(db, deleteLimitStatement(parseOrThrow(LimitKey, key, "limit key")));
}
