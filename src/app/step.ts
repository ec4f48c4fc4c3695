// What a workflow's handler is given as `step`: declared here, beside the task a workflow is; src/workflow runs it.
import type * as v from "valibot";
import type { BackoffPolicy } from "../core/backoff.js";
import type { Duration } from "../core/duration.js";
import type { RetryPolicy } from "../core/retry-policy.js";
import type { EnqueueOptions } from "../core/validate.js";
import type { BatchItem, Db } from "../db/query.js";
import type { ArgsSchema, Task } from "./task.js";

/**
 * A step's name, or its name and the names it had before: a renamed step finds what runs started on the old
 * code stored under an old name (and keeps writing there), so a deploy can rename a step without failing
 * parked runs. Once no run with the old name is left, drop `formerly`.
 * @example await step.sleep({ name: "cool-off", formerly: ["pause"] }, "1d");
 */
export type StepName = string | { name: string; formerly: readonly string[] };

/** What a step's function sees. @example await step.run("charge", ({ attempt }) => charge(order, { idempotencyKey: `o-${order}-${attempt}` })); */
export interface StepContext {
  /** 1 the first time this step runs, counted per step (not the job's attempt). */
  attempt: number;
  /** The job's signal: aborts on a cancel request seen by the heartbeat, the run's timeout, a lost lease. */
  signal: AbortSignal;
}

/** A step's own retry policy and timeout; each retry field defaults to the workflow task's. @example await step.run("mail", send, { maxAttempts: 5, backoff: { wait: "10s", backoff: 2 }, timeout: "30s" }); */
export interface StepOptions {
  /** Runs of this step including the first. */
  maxAttempts?: number;
  /** Delay per failed run of this step: a function of the step's attempt, or a declarative `RetryPolicy`. */
  backoff?: BackoffPolicy | RetryPolicy;
  /** Only errors it accepts are retried; others fail the workflow at once. */
  retryOn?: (error: unknown) => boolean;
  /**
   * How long one attempt of this step may take (`run`, `transaction`, `batch`): past it the step's signal
   * aborts and the attempt fails with `StepTimeout` (retried like any failure of the step, even if `retryOn`
   * refuses it); a late result is not stored and a `transaction` rolls back. The job's own timeout and the
   * invocation's budget still bound the whole run. Default: none.
   */
  timeout?: Duration;
}

/** Options of `step.runJobs` and `step.invoke`. @example await step.runJobs("thumbs", thumbnail, images, { poll: "30s", enqueue: { priority: 5 } }); */
export interface ChildJobsOptions {
  /** How often the parked workflow looks whether its children have finished (one claim of it each time). Default 10 s. */
  poll?: Duration;
  /** The children's enqueue options (queue, priority, delay, limitKey...); `uniqueKey` is refused (one key would be shared by all). */
  enqueue?: EnqueueOptions;
}

/** A finished child job as a workflow sees it. `missing`: the job was pruned before the workflow looked. */
export interface ChildJob<R = unknown> {
  id: number;
  state: "succeeded" | "failed" | "cancelled" | "rate_limited" | "missing";
  result: R | null;
  /** The child's last error entry, if any. */
  error: { kind: string; message: string } | null;
}

/** What `waitForEvent` waits for. @example await step.waitForEvent("shipped", { event: "order.shipped", match: { orderId: 7 }, timeout: "7d" }); */
export interface WaitForEventOptions {
  /** The event's name, as `sendEvent` gives it. Default: the step's name. */
  event?: string;
  /** A JSON object the event's payload must contain (Postgres `@>`: `{ orderId: 7 }` matches `{ orderId: 7, carrier: "ups" }`). Default: any payload. */
  match?: Record<string, unknown>;
  /** How long to wait; past it the step returns `null`. */
  timeout: Duration;
}

/**
 * The steps of one run of a workflow: each call is memoized in `akadze.steps` under its name, and a replay
 * gets the stored result without running it again. Step names must be unique within a workflow and reached
 * in the same order on every run; `patched` and `formerly` change a workflow without failing its parked runs.
 * @example const charge = await step.run("charge", () => payments.charge(order));
 */
export interface Step {
  /** Runs `fn` once; its JSON result is stored and returned on every later run. A throw retries this step alone. */
  run<T>(name: StepName, fn: (ctx: StepContext) => T | Promise<T>, options?: StepOptions): Promise<Awaited<T>>;
  /**
   * Runs `fn` in a transaction that also stores the step's result: the app's writes through `tx` commit with
   * it or not at all (exactly once). Not on neon-http (no interactive transactions): use `batch` there.
   */
  transaction<T>(name: StepName, fn: (tx: Db, ctx: StepContext) => Promise<T>, options?: StepOptions): Promise<T>;
  /** Runs the queries `build` returns and stores the step as done, all as one transaction (`db.batch` on neon-http). */
  batch(name: StepName, build: (db: Db) => BatchItem[], options?: StepOptions): Promise<void>;
  /** Parks the run for `duration` (no slot, lease or connection held, no attempt spent). */
  sleep(name: StepName, duration: Duration): Promise<void>;
  /** Parks the run until `at`. */
  sleepUntil(name: StepName, at: Date): Promise<void>;
  /** Parks the run until `sendEvent` delivers a matching event (its payload is returned) or the timeout passes (`null`). */
  waitForEvent<T = unknown>(name: StepName, options: WaitForEventOptions): Promise<T | null>;
  /**
   * Enqueues one child job per args (exactly once, with the step) and parks until all have finished;
   * returns each child's state, result (typed as the task's handler returns it) and last error, in order
   * (Celery's group and chord).
   */
  runJobs<S extends ArgsSchema, R>(name: StepName, task: Task<S, R>, args: v.InferInput<S>[], options?: ChildJobsOptions): Promise<ChildJob<R>[]>;
  /**
   * One child job: its result once it succeeded, typed as the task's handler returns it; `ChildJobFailed`
   * if it failed, was cancelled or ended rate_limited.
   */
  invoke<S extends ArgsSchema, R>(name: StepName, task: Task<S, R>, args: v.InferInput<S>, options?: ChildJobsOptions): Promise<R>;
  /**
   * Whether this run takes the code path added under `id`: true for a run that reaches this point on the new
   * code (recorded in its journal, so its replays answer true again), false for a run that had already gone
   * past this point without it (it keeps the old path). The same answer for every call with `id` in one run;
   * a marker takes no position, so the call can be removed once no run on the old path is left.
   * @example if (await step.patched("fraud-check")) await step.run("fraud-check", () => screen(order));
   */
  patched(id: string): Promise<boolean>;
}
