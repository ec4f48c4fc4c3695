import * as v from "valibot";
import { backoffMs } from "../core/backoff.js";
import { Cancel, Fail, JobTimeout, ResultNotJson, Snooze } from "../core/errors.js";
import { retryDelay } from "../core/retry-policy.js";
import { describeNonJson } from "../core/json.js";
import { describeIssues } from "../core/validate.js";
import type { Hooks, HookJob } from "../app/hooks.js";
import type { JobContext, TaskDefinition } from "../app/task.js";
import type { ClaimedJob } from "../sql/claim/claim-answer.js";
import type { ErrorEntry } from "../core/errors.js";
import { errorEntryOf } from "../core/error-entry.js";
import type { Outcome } from "../sql/settle/settle.js";
import type { SQL } from "drizzle-orm";
import type { App } from "../app/app.js";
import type { Db } from "../db/query.js";
import { CurrentJob, withCurrentJob } from "./context.js";
import type { JobAbort } from "./signal.js";
import type { RunTrace } from "../core/tracing.js";
import { BatchOutcomeMissing, type BatchJob } from "../app/batch.js";
import type { WorkflowDefinition } from "../app/workflow.js";
import { runWorkflow } from "../workflow/run-workflow.js";
import type { Batches, BatchTicket } from "./batches.js";

/** A batch task's job: its body joins its batch (batches.ts) instead of calling the handler alone. */
export interface BatchSeat { batches: Batches; ticket: BatchTicket }

/** Everything one run of one job needs. */
export interface JobRun {
  job: ClaimedJob;
  /** The invocation (lease owner) running it. */
  owner?: string;
  task: TaskDefinition;
  hooks: Hooks;
  controller: JobAbort;
  current: CurrentJob;
  timeoutMs: number;
  now: () => Date;
  /** `now` is the real clock: the timeout is measured on the monotonic clock alone. */
  monotonic?: boolean;
  timeoutFrom?: "task" | "budget";
  /** Told when the outcome is decided (a timeout) while the body still runs, with a promise of its end. */
  lingering?: (body: Promise<unknown>) => void;
  batch?: BatchSeat;
  /** A workflow's job: its body runs the workflow with its steps instead of calling the handler. */
  workflow?: WorkflowDefinition;
}

/** What the engine hands over to run one claimed job. */
export interface JobStart {
  app: App; db: Db; owner: string; job: ClaimedJob; controller: JobAbort; timeoutMs: number;
  now: () => Date; sqlNow: () => SQL;
  /** See JobRun.monotonic. */
  monotonic?: boolean;
  /** False: completeTx/completeBatch keep no row of the job (`retention.keepSucceeded`). */
  keepSucceeded?: boolean;
  /** Where `timeoutMs` came from, for the timeout's message. */
  timeoutFrom?: "task" | "budget";
  /** See JobRun.lingering. */
  lingering?: (body: Promise<unknown>) => void;
  /** The run's span, when the app traces: the body runs inside it. */
  trace?: RunTrace | null;
  /** See JobRun.batch. */
  batch?: BatchSeat;
}

/**
 * Runs one claimed job and always settles with its outcome (`null`: completeTx/completeBatch recorded it):
 * nothing the body, its hooks or its thrown value do can make it reject.
 */
export function runJob(start: JobStart): Promise<Outcome | null> {
  const { app, job } = start;
  const task = app.tasks.get(job.task)!;
  const current = new CurrentJob(job.id, {
    db: start.db, owner: start.owner, now: start.now, sqlNow: start.sqlNow, hooks: app.hooks, task: job.task, queue: job.queue, attempt: job.attempt,
    keepSucceeded: start.keepSucceeded !== false,
    timeoutMs: start.timeoutMs, monotonic: start.monotonic, trace: start.trace ?? null,
  });
  const run: JobRun = { job, owner: start.owner, task, hooks: app.hooks, controller: start.controller, current, timeoutMs: start.timeoutMs, now: start.now, monotonic: start.monotonic,
    timeoutFrom: start.timeoutFrom ?? (task.timeoutMs === undefined ? "budget" : "task"), lingering: start.lingering, batch: start.batch,
    workflow: app.workflows.get(job.task) };
  const failed = (error: unknown): Outcome | null => current.completed ? null
    : { id: job.id, kind: "error", attempt: job.attempt, delayMs: backoffMs(job.attempt, task.backoff), error: errorEntry(run, error) };
  try {
    return executeJob(run).catch(failed);
  } catch (error) {
    return Promise.resolve(failed(error));
  }
}

/**
 * Runs a job's body (with its hooks) under its timeout and turns what happened into an outcome;
 * `null` when completeTx/completeBatch already recorded it. (Written with callbacks rather than `await`:
 * while `current()`'s AsyncLocalStorage is on, every promise and every await costs each job a hook call.)
 */
export function executeJob(run: JobRun): Promise<Outcome | null> {
  const { job, task, controller } = run;
  const parsed = v.safeParse(task.schema, job.args);
  if (!parsed.success) {
    return Promise.resolve({ id: job.id, kind: "fail", attempt: job.attempt, error: errorEntry(run, new Fail(`args no longer match the task's schema: ${describeIssues(parsed.issues)}`)) });
  }
  const overran = overrunCheck(run);
  const trace = run.current.trace;
  const body = withCurrentJob(run.current, trace === null ? () => runBody(run, parsed.output, overran)
    : () => trace.within(() => runBody(run, parsed.output, overran)));
  const ended = (result: unknown): Outcome | null | Promise<Outcome | null> => afterReports(run, endedWith(result));
  const threw = (error: unknown): Outcome | null | Promise<Outcome | null> => afterReports(run, run.current.completed ? null
    : outcomeOfError(run, overran() ? timeoutError(run) : error));
  const endedWith = (result: unknown): Outcome | null | Promise<null> => {
    if (run.current.completed) return run.current.keepResult(result).then(() => null, () => null);
    // A body that held the event loop past its timeout kept the timer from firing: the clocks decide.
    if (overran()) return outcomeOfError(run, timeoutError(run));
    return { id: job.id, kind: "succeeded", result: result === undefined ? null : result, attempt: job.attempt, task: job.task, queue: job.queue };
  };
  // A long-lived worker's job without a declared timeout has none: its body alone decides.
  if (!Number.isFinite(run.timeoutMs)) return body.then(ended, threw);
  let timer: ReturnType<typeof setTimeout> | undefined;
  let bodyEnded = false;
  const timedOut = new Promise<never>((_, reject) => {
    body.then(() => { bodyEnded = true; }, () => { bodyEnded = true; });
    timer = setTimeout(() => {
      const error = timeoutError(run);
      controller.abort(error);
      reject(error);
      // A body that ignores its signal runs on: whoever records the outcome may wait for it.
      if (!bodyEnded) run.lingering?.(body);
    }, run.timeoutMs);
  });
  return Promise.race([body, timedOut]).then((result) => { clearTimeout(timer); return ended(result); },
    (error) => { clearTimeout(timer); return threw(error); });
}

/**
 * The outcome once the run's reports (`job.progress`, `job.log`) are written, so the last ones are stored before
 * the job ends; at once (no promise more) for a run that reported nothing.
 */
function afterReports<T>(run: JobRun, outcome: T | Promise<T>): T | Promise<T> {
  const reports = run.current.reports;
  if (reports === undefined) return outcome;
  return reports.close().then(() => outcome);
}

/**
 * Whether the run has outlived its timeout: on the monotonic clock (which a wall-clock step cannot fool)
 * when the invocation runs on the real clock; with a caller's clock (which tests move), by that clock or
 * the monotonic one. Aborts `job.signal` when it has.
 */
function overrunCheck(run: JobRun): () => boolean {
  if (!Number.isFinite(run.timeoutMs)) return () => false;
  const startedAt = run.now().getTime();
  const startedMono = performance.now();
  return () => {
    const mono = performance.now() - startedMono;
    const elapsed = run.monotonic ? mono : Math.max(run.now().getTime() - startedAt, mono);
    if (elapsed <= run.timeoutMs) return false;
    if (!run.controller.aborted) run.controller.abort(timeoutError(run));
    return true;
  };
}

function timeoutError(run: JobRun): JobTimeout {
  const reason = run.controller.reason;
  if (reason instanceof JobTimeout) return reason;
  return new JobTimeout(run.timeoutFrom === "budget"
    ? `task ${run.task.name} ran past the ${run.timeoutMs} ms left of its invocation's budget (it declares no timeout of its own)`
    : `task ${run.task.name} ran past its timeout of ${run.timeoutMs} ms`);
}

/**
 * What a body (and, with its args, a hook) sees of its job; the signal is made only if it is read. (A class:
 * an object literal with a getter cost each job more than the rest of its context.)
 */
class RunContext implements JobContext {
  readonly id: number;
  readonly task: string;
  readonly queue: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly db: Db;
  readonly #controller: JobAbort;
  readonly #current: CurrentJob;
  constructor(job: ClaimedJob, controller: JobAbort, readonly invocation: string, current: CurrentJob) {
    this.#controller = controller;
    this.#current = current;
    this.db = current.db;
    this.id = job.id;
    this.task = job.task;
    this.queue = job.queue;
    this.attempt = job.attempt;
    this.maxAttempts = job.max_attempts;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  progress(value: unknown): void {
    this.#current.progress(value);
  }

  log(...parts: unknown[]): void {
    this.#current.log(...parts);
  }
}

class HookContext extends RunContext implements HookJob {
  constructor(job: ClaimedJob, controller: JobAbort, invocation: string, current: CurrentJob, readonly args: unknown) {
    super(job, controller, invocation, current);
  }
}

function jobContext(run: JobRun): JobContext {
  return new RunContext(run.job, run.controller, run.owner ?? "", run.current);
}

/**
 * Calls the task's handler for this job, runs its workflow with its steps (handing it the running job), or joins
 * the job's batch (a batch task's handler gets many jobs at once).
 */
function callHandler(run: JobRun, args: unknown): unknown {
  const context = jobContext(run);
  if (run.workflow) return runWorkflow(run.workflow, run.task, args, context, run.current);
  if (!run.batch) return run.task.handler(args, context);
  const { batches, ticket } = run.batch;
  return batches.join(ticket, batchJob(context, args), run.controller);
}

/** A job as a batch handler sees it: its context and its args. */
function batchJob(c: JobContext, args: unknown): BatchJob {
  return {
    id: c.id, task: c.task, queue: c.queue, attempt: c.attempt, maxAttempts: c.maxAttempts, invocation: c.invocation, db: c.db, args,
    get signal() { return c.signal; },
    progress: (value) => c.progress(value),
    log: (...parts) => c.log(...parts),
  };
}

/** The body and, when the app has any, its beforeRun and afterRun hooks; rejects with whatever the body threw. */
function runBody(run: JobRun, args: unknown, overran: () => boolean): Promise<unknown> {
  if (run.hooks.before.length > 0 || run.hooks.after.length > 0) return runBodyWithHooks(run, args, overran);
  try {
    return Promise.resolve(callHandler(run, args)).then((result) => returned(run, result, overran));
  } catch (error) {
    return Promise.reject(error);
  }
}

async function runBodyWithHooks(run: JobRun, args: unknown, overran: () => boolean): Promise<unknown> {
  const hookJob: HookJob = new HookContext(run.job, run.controller, run.owner ?? "", run.current, run.job.args);
  for (const hook of run.hooks.before) await hook(hookJob);
  const result = returned(run, await callHandler(run, args), overran);
  if (run.current.completed) return result;
  for (const hook of run.hooks.after) await hook(hookJob, result);
  return result;
}

/** What the body returned, once checked: a late body is a timeout, and a result must be JSON. */
function returned(run: JobRun, result: unknown, overran: () => boolean): unknown {
  if (run.current.completed) return result;
  // afterRun hooks run only inside the timeout: a late body is a timeout before its result is looked at.
  if (overran()) throw timeoutError(run);
  const notJson = result === undefined ? null : describeNonJson(result);
  if (notJson !== null) throw new ResultNotJson(`task ${run.task.name} returned a value that is not JSON: ${notJson}`);
  return result;
}

function outcomeOfError(run: JobRun, error: unknown): Outcome {
  const id = run.job.id;
  const attempt = run.job.attempt;
  if (error instanceof Cancel) return { id, kind: "cancel", attempt };
  if (error instanceof Snooze) return { id, kind: "snooze", attempt, delayMs: error.delayMs, error: errorEntry(run, error) };
  if (error instanceof Fail) return { id, kind: "fail", attempt, error: errorEntry(run, error) };
  // No maxAttempts: the database counts the job's attempts. The runtime's own verdicts are retried whatever retryOn says.
  const delayMs = retryDelay(error, attempt, { backoff: run.task.backoff, retryOn: run.task.retryOn }, isRuntimeVerdict);
  if (delayMs === null) return { id, kind: "fail", attempt, error: errorEntry(run, error) };
  return { id, kind: "error", attempt, delayMs, error: errorEntry(run, error) };
}

/** An error the runtime raised about the run rather than the body's own: a timeout, a result not JSON, a batch's missing answer. */
function isRuntimeVerdict(error: unknown): boolean {
  return error instanceof JobTimeout || error instanceof ResultNotJson || error instanceof BatchOutcomeMissing;
}

/** The history entry for whatever was thrown, on the invocation's clock. */
function errorEntry(run: JobRun, error: unknown): ErrorEntry {
  return errorEntryOf(error, run.job.attempt, run.now());
}
