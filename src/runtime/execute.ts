import * as v from "valibot";
import { backoffMs } from "../core/backoff.js";
import { Cancel, Fail, JobTimeout, ResultNotJson, Retry, Snooze } from "../core/errors.js";
import { describeNonJson, isJsonValue } from "../core/json.js";
import { describeIssues } from "../app/options.js";
import type { Hooks, HookJob } from "../app/hooks.js";
import type { TaskDefinition } from "../app/task.js";
import type { ClaimedJob } from "../sql/claim.js";
import type { ErrorEntry, Outcome } from "../sql/complete.js";
import { withCurrentJob, type CurrentJob } from "./context.js";

/** Everything one run of one job needs. */
export interface JobRun {
  job: ClaimedJob;
  task: TaskDefinition;
  hooks: Hooks;
  controller: AbortController;
  current: CurrentJob;
  timeoutMs: number;
  now: () => Date;
}

/**
 * Runs a job's body (with its hooks) under its timeout and turns what happened into an outcome;
 * `null` when completeTx/completeBatch already recorded it.
 */
export async function executeJob(run: JobRun): Promise<Outcome | null> {
  const { job, task, controller } = run;
  const parsed = v.safeParse(task.schema, job.args);
  if (!parsed.success) {
    return { id: job.id, kind: "fail", error: errorEntry(run, new Fail(`args no longer match the task's schema: ${describeIssues(parsed.issues)}`)) };
  }
  const hookJob: HookJob = {
    id: job.id, task: job.task, queue: job.queue, attempt: job.attempt, maxAttempts: job.max_attempts,
    signal: controller.signal, args: job.args,
  };
  const overran = overrunCheck(run);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    if (!Number.isFinite(run.timeoutMs)) return; // a long-lived worker without a declared timeout
    timer = setTimeout(() => {
      const error = timeoutError(run);
      controller.abort(error);
      reject(error);
    }, run.timeoutMs);
  });
  try {
    const result = await Promise.race([withCurrentJob(run.current, () => runBody(run, parsed.output, hookJob, overran)), timedOut]);
    if (run.current.completed) {
      await run.current.keepResult(result);
      return null;
    }
    // A body that held the event loop past its timeout kept the timer from firing: the clocks decide.
    if (overran()) return outcomeOfError(run, timeoutError(run));
    return { id: job.id, kind: "succeeded", result: result === undefined ? null : result };
  } catch (error) {
    if (run.current.completed) return null;
    return outcomeOfError(run, overran() ? timeoutError(run) : error);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Whether the run has outlived its timeout, by the invocation's clock (which tests move) or by the
 * monotonic clock (which a wall-clock jump cannot fool). Aborts `job.signal` when it has.
 */
function overrunCheck(run: JobRun): () => boolean {
  const startedAt = run.now().getTime();
  const startedMono = performance.now();
  return () => {
    if (!Number.isFinite(run.timeoutMs)) return false;
    const elapsed = Math.max(run.now().getTime() - startedAt, performance.now() - startedMono);
    if (elapsed <= run.timeoutMs) return false;
    if (!run.controller.signal.aborted) run.controller.abort(timeoutError(run));
    return true;
  };
}

function timeoutError(run: JobRun): JobTimeout {
  const reason = run.controller.signal.reason;
  return reason instanceof JobTimeout ? reason : new JobTimeout(`task ${run.task.name} ran past its timeout of ${run.timeoutMs} ms`);
}

async function runBody(run: JobRun, args: unknown, hookJob: HookJob, overran: () => boolean): Promise<unknown> {
  for (const hook of run.hooks.before) await hook(hookJob);
  const { signal: _signal, args: _args, ...context } = hookJob;
  const result = await run.task.handler(args, { ...context, signal: run.controller.signal });
  if (run.current.completed) return result;
  // afterRun hooks run only inside the timeout: a late body is a timeout before its result is looked at.
  if (overran()) throw timeoutError(run);
  if (result !== undefined && !isJsonValue(result)) {
    throw new ResultNotJson(`task ${run.task.name} returned a value that is not JSON: ${describeNonJson(result)}`);
  }
  for (const hook of run.hooks.after) await hook(hookJob, result);
  return result;
}

function outcomeOfError(run: JobRun, error: unknown): Outcome {
  const id = run.job.id;
  if (error instanceof Cancel) return { id, kind: "cancel" };
  if (error instanceof Snooze) return { id, kind: "snooze", delayMs: error.delayMs, error: errorEntry(run, error) };
  if (error instanceof Retry) return { id, kind: "error", delayMs: error.delayMs, error: errorEntry(run, error) };
  if (error instanceof Fail) return { id, kind: "fail", error: errorEntry(run, error) };
  const retryable = !run.task.retryOn || error instanceof ResultNotJson || error instanceof JobTimeout || safePredicate(run.task.retryOn, error);
  if (!retryable) return { id, kind: "fail", error: errorEntry(run, error) };
  return { id, kind: "error", delayMs: backoffMs(run.job.attempt, run.task.backoff), error: errorEntry(run, error) };
}

function safePredicate(predicate: (error: unknown) => boolean, error: unknown): boolean {
  try { return Boolean(predicate(error)); } catch { return true; }
}

function errorEntry(run: JobRun, error: unknown): ErrorEntry {
  const e = error instanceof Error ? error : new Error(String(error));
  return { attempt: run.job.attempt, at: run.now().toISOString(), kind: e.name, message: e.message, stack: e.stack ?? null };
}
