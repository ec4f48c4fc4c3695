import type { BackoffPolicy } from "../core/backoff.js";
import type { ErrorEntry } from "../core/errors.js";
import { parseDuration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { errorText } from "../core/json.js";
import { resolveRetryPolicy } from "../core/retry-policy.js";
import { MaxAttemptsSchema, parseOrThrow } from "../core/validate.js";
import type { StepOptions } from "./api.js";
import type { StepPolicy } from "./types.js";

/** A step's retry policy with the workflow's defaults filled in, and its own timeout (none: undefined). */
export interface ResolvedStepPolicy {
  maxAttempts: number; backoff: BackoffPolicy | undefined; retryOn: ((error: unknown) => boolean) | undefined; timeoutMs?: number;
}

/** The step's own policy over its workflow task's (throws InvalidInput for a bad option). */
export function resolveStepPolicy(name: string, base: StepPolicy, options: StepOptions | undefined): ResolvedStepPolicy {
  if (!options) return base;
  const retry = resolveRetry(name, base, options);
  if (options.timeout === undefined) return retry;
  let timeoutMs: number;
  try { timeoutMs = parseDuration(options.timeout, `step ${JSON.stringify(name)}: timeout`); } catch (error) { throw new InvalidInput((error as Error).message); }
  if (timeoutMs <= 0) throw new InvalidInput(`step ${JSON.stringify(name)}: timeout must be positive, got ${JSON.stringify(options.timeout)}`);
  return { ...retry, timeoutMs };
}

function resolveRetry(name: string, base: StepPolicy, options: StepOptions): ResolvedStepPolicy {
  const maxAttempts = options.maxAttempts === undefined ? undefined : parseOrThrow(MaxAttemptsSchema, options.maxAttempts, `step ${name} maxAttempts`);
  if (options.backoff === undefined || typeof options.backoff === "function") {
    return { maxAttempts: maxAttempts ?? base.maxAttempts, backoff: options.backoff ?? base.backoff, retryOn: options.retryOn ?? base.retryOn };
  }
  const policy = resolveRetryPolicy(options.backoff);
  return { maxAttempts: maxAttempts ?? policy.maxAttempts ?? base.maxAttempts, backoff: policy.backoff, retryOn: options.retryOn ?? policy.retryOn ?? base.retryOn };
}

/** The predicate's answer; a predicate that throws retries (as for tasks). */
export function safePredicate(predicate: (error: unknown) => boolean, error: unknown): boolean {
  try { return Boolean(predicate(error)); } catch { return true; }
}

/** A step failure as an errors entry (texts bounded like a job's). */
export function errorEntry(attempt: number, at: Date, error: unknown): ErrorEntry {
  let kind = "Error", message: string, stack: string | null = null;
  try {
    if (error instanceof Error) { kind = error.name; message = error.message; stack = error.stack ?? null; }
    else { kind = error === null ? "null" : `NonError(${typeof error})`; message = JSON.stringify(error) ?? String(error); }
  } catch { message = "a value that cannot be turned into text"; }
  return { attempt, at: at.toISOString(), kind, message: errorText(message), stack: stack === null ? null : errorText(stack) };
}
