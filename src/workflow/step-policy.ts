import { parseDuration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { resolveRetryPolicy, type RetryRules } from "../core/retry-policy.js";
import { MaxAttemptsSchema, parseOrThrow } from "../core/validate.js";
import type { StepOptions } from "../app/step.js";

/** The retry policy steps get from their workflow task. */
export interface StepPolicy extends RetryRules {
  maxAttempts: number;
}

/** A step's retry policy with the workflow's defaults filled in, and its own timeout (none: undefined). */
export interface ResolvedStepPolicy extends StepPolicy {
  timeoutMs?: number;
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
