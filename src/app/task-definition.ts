// A task as declared: its options, its handler and what the handler sees of its job, checked and resolved
// (defineTask), and a batch task's definition. task.ts is the handle that enqueues it.
import * as v from "valibot";
import type { BackoffPolicy } from "../core/backoff.js";
import { resolveRetryPolicy, type RetryPolicy } from "../core/retry-policy.js";
import type { Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { NameSchema, parseOrThrow, TaskOptionsSchema } from "../core/validate.js";
import type { Db } from "../db/query.js";

/** The queue of a task that names none. @example app.task("t", async () => {}); // queue "default" */
export const DEFAULT_QUEUE = "default";
/** The attempt budget of a task that sets none, including the first run. @example app.task("sms", { maxAttempts: 1 }, send); // never twice */
export const DEFAULT_MAX_ATTEMPTS = 3;

/** What a task body sees of its job. @example app.task("t", async (_args, job: JobContext) => { if (job.signal.aborted) return; }); */
export interface JobContext {
  id: number;
  task: string;
  queue: string;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
  /** The id of the invocation or worker lane running it (its lease owner), e.g. for logs. */
  invocation: string;
  /** Aborts on timeout, on a cancel request seen by the heartbeat, and when the lease is lost. */
  signal: AbortSignal;
  /**
   * The database this run claimed the job from (the invocation's or the worker's), for the body's own reads
   * and writes. What it writes commits on its own, whatever the job's outcome: to commit writes together with
   * the job's success, use `current().completeTx` or `completeBatch`.
   * @example app.task("report.build", async ({ id }, job) => { await job.db.update(reports).set({ ready: true }).where(eq(reports.id, id)); });
   */
  db: Db;
  /**
   * Reports how far the job has got: a JSON value of at most 16 KiB, which `getJob`, the CLI, the dashboard and
   * the event stream of `akadze/hono` show. Coalesced: a tight loop of calls costs a few statements, and the last
   * value is written before the job's outcome. Throws `InvalidInput` for a value that is not JSON or too large.
   * @example app.task("import", async ({ rows }, job) => { for (let i = 0; i < rows.length; i++) { await load(rows[i]); job.progress({ done: i + 1, of: rows.length }); } });
   */
  progress(value: unknown): void;
  /**
   * Adds a line to the job's log, kept with the job and this attempt (200 lines and 64 KiB per job at most, the
   * rest counted as dropped); parts are joined by spaces, non-strings as JSON. Written coalesced like `progress`.
   * @example job.log("fetched", rows.length, "rows");
   */
  log(...parts: unknown[]): void;
}

export type ArgsSchema = v.GenericSchema<any, any>;

/** A task's options; every one has a default. @example app.task("mail.send", { queue: "mail", maxAttempts: 6, timeout: "60s" }, send); */
export interface TaskOptions<S extends ArgsSchema = ArgsSchema> {
  /** Valibot schema of the args, checked at enqueue and again at run time. Default `v.object({})`. */
  args?: S;
  /** Default `"default"`. */
  queue?: string;
  /** Attempt budget including the first run. Default 3. */
  maxAttempts?: number;
  /** The run is an error (and `job.signal` aborts) past this. Default: the invocation's remaining budget. */
  timeout?: Duration;
  /**
   * Retry delay per failed attempt: a function of the attempt, or a declarative `RetryPolicy` (which may
   * also set `maxAttempts` and filter errors). Default 2^(attempt-1) s up to 300 s with jitter.
   */
  backoff?: BackoffPolicy | RetryPolicy;
  /** Only errors it accepts are retried; others fail the job at once. With a `RetryPolicy`'s `retryOn`, both must accept. */
  retryOn?: (error: unknown) => boolean;
  /** Default priority of this task's jobs (smallint, higher first). */
  priority?: number;
  /**
   * Opt-in bound for jobs enqueued with a `limitKey`: once due, a job held back by its limit for longer
   * than this ends `rate_limited` instead of waiting on. Default: no bound (it waits in `queued`).
   */
  limitWait?: Duration;
}

/**
 * A task body: validated args and the job context; what it returns (`R`, JSON) is the job's result, and
 * `R` is what `getJob(db, id, task)` and `step.invoke` give back.
 * @example const handler: Handler<typeof Args> = async ({ userId }, job) => ({ userId, attempt: job.attempt });
 */
export type Handler<S extends ArgsSchema, R = unknown> = (args: v.InferOutput<S>, job: JobContext) => R | Promise<R>;

/** A registered task, resolved with its defaults; `R` is its handler's result. */
export interface TaskDefinition<R = unknown> {
  name: string;
  schema: ArgsSchema;
  queue: string;
  maxAttempts: number;
  timeoutMs: number | undefined;
  backoff: BackoffPolicy | undefined;
  retryOn: ((error: unknown) => boolean) | undefined;
  priority: number;
  limitWaitMs: number | undefined;
  handler: Handler<any, R>;
  /** A batch task's batching (`app.batchTask`): its jobs' bodies share handler calls. */
  batch?: BatchDefinition;
}

const EMPTY_ARGS = v.object({});

/** Validates a task's name, options and handler (throws InvalidInput) and applies the defaults. */
export function defineTask<S extends ArgsSchema, R>(name: string, options: TaskOptions<S>, handler: Handler<S, R>): TaskDefinition<R> {
  parseOrThrow(NameSchema, name, "task name");
  if (typeof handler !== "function") throw new InvalidInput(`task ${name}: the handler must be a function`);
  const o = parseOrThrow(TaskOptionsSchema, options, `options of task ${name}`);
  const retry = resolveRetry(name, options);
  const maxAttempts = o.maxAttempts ?? retry.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  return {
    name,
    schema: options.args ?? EMPTY_ARGS,
    queue: o.queue ?? DEFAULT_QUEUE,
    maxAttempts,
    timeoutMs: o.timeout,
    backoff: retry.backoff,
    retryOn: retry.retryOn,
    priority: o.priority ?? 0,
    limitWaitMs: o.limitWait,
    handler,
  };
}

/** The task's backoff and error filter, from a function or a declarative policy composed with `retryOn`. */
function resolveRetry(name: string, options: TaskOptions<any>): { backoff?: BackoffPolicy; retryOn?: (error: unknown) => boolean; maxAttempts?: number } {
  // (TaskOptionsSchema has checked that backoff is a function or an object, and retryOn a function.)
  const { backoff, retryOn } = options;
  if (backoff === undefined || typeof backoff === "function") return { backoff, retryOn };
  let policy;
  try {
    policy = resolveRetryPolicy(backoff);
  } catch (error) {
    throw new InvalidInput(`task ${name}: invalid backoff policy: ${(error as Error).message}`, { cause: error });
  }
  if (policy.maxAttempts !== undefined && options.maxAttempts !== undefined && policy.maxAttempts !== options.maxAttempts) {
    throw new InvalidInput(`task ${name}: maxAttempts is ${options.maxAttempts} but its backoff policy says ${policy.maxAttempts}: give it once`);
  }
  const own = policy.retryOn;
  const both = own && retryOn ? (error: unknown) => own(error) && retryOn(error) : own ?? retryOn;
  return { backoff: policy.backoff, retryOn: both, maxAttempts: policy.maxAttempts };
}

// A batch task's definition (app.batchTask, batch.ts): its handler's types live here, beside the task definition that holds them.

/** One job of a batch as its handler sees it: its context, with its validated args. @example jobs.map((job) => job.args.userId) */
export interface BatchJob<A = unknown> extends JobContext {
  args: A;
}

/**
 * What a batch handler returns: an array with one entry per job, in the order of the jobs, or a Map from job id
 * to its entry; an entry is the job's result (JSON), or an Error for that job alone (`Retry`, `Snooze`, `Fail`
 * and `Cancel` included). Nothing (`undefined`): every job succeeds with no result.
 * @example return jobs.map((job) => job.args.to.endsWith("@") ? new Fail("bad address") : { sent: true });
 */
export type BatchOutcomes<R = unknown> = (R | Error)[] | ReadonlyMap<number, R | Error> | void;

/** A batch task's handler: the jobs of one batch, in the order they started. */
export type BatchHandler<S extends ArgsSchema, R = unknown> = (jobs: BatchJob<v.InferOutput<S>>[]) => BatchOutcomes<R> | Promise<BatchOutcomes<R>>;

/** A batch task's batching, resolved. */
export interface BatchDefinition {
  maxBatch: number;
  maxWaitMs: number;
  handler: BatchHandler<any, unknown>;
}
