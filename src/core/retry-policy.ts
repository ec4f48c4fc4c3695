import * as v from "valibot";
import { backoffMs, POLICY_MAX_DELAY_MS, type BackoffPolicy } from "./backoff.js";
import { DurationSchema, parseDuration, type Duration } from "./duration.js";
import { Retry } from "./errors.js";
import { describeIssues, MaxAttemptsSchema } from "./validate.js";

/** An error class a policy retries on: `retryOn: [VendorError, TypeError]`. */
export type ErrorClass = abstract new (...args: any[]) => unknown;

/**
 * A declarative retry policy (aio-fluid's `RetryPolicy`), accepted by a task's `backoff` option in place
 * of a function. The delay after failed attempt n is `wait * backoff^(n-1)`, at most `maxWait`, then
 * jittered if asked; like any policy's delay it is clamped to [0, 365 days].
 * @example
 * app.task("vendor.fetch", { backoff: { maxAttempts: 5, wait: "2s", backoff: 2, maxWait: "1m", retryOn: [VendorError] } }, fetchIt);
 */
export interface RetryPolicy {
  /** The attempt budget including the first run; the task's `maxAttempts` when omitted. */
  maxAttempts?: number;
  /** The delay after the first failed attempt. Default `"1s"`. */
  wait?: Duration;
  /** Each further delay is this many times the previous one; 1 (the default) keeps it fixed. */
  backoff?: number;
  /** No delay grows past this. Default: 365 days, the bound of every policy. */
  maxWait?: Duration;
  /** `true`: each delay is scaled by a uniform factor in [50 %, 100 %], as the default curve is. Default false. */
  jitter?: boolean;
  /** Errors to retry (a predicate, or error classes); others fail the job at once. Combined with the task's `retryOn`: both must accept. */
  retryOn?: ((error: unknown) => boolean) | readonly ErrorClass[];
}

/** A policy's defaults: one second, fixed. @example const p: RetryPolicy = { ...RETRY_POLICY_DEFAULTS, backoff: 2 }; */
export const RETRY_POLICY_DEFAULTS = { wait: "1s", backoff: 1, jitter: false } as const satisfies RetryPolicy;

const RetryPolicySchema = v.strictObject({
  maxAttempts: v.optional(MaxAttemptsSchema),
  wait: v.optional(DurationSchema),
  backoff: v.optional(v.pipe(v.number("backoff must be a number (the factor between delays)"),
    v.finite("backoff must be finite"), v.minValue(1, "backoff must be at least 1 (1 keeps the delay fixed)"))),
  maxWait: v.optional(DurationSchema),
  jitter: v.optional(v.boolean("jitter must be true or false")),
  retryOn: v.optional(v.union([
    v.function(),
    v.array(v.function(), "retryOn must be a predicate or an array of error classes"),
  ], "retryOn must be a predicate or an array of error classes")),
});

/** What a task keeps of a policy: a backoff function, an error filter and perhaps an attempt budget. */
export interface ResolvedRetryPolicy {
  backoff: BackoffPolicy;
  retryOn: ((error: unknown) => boolean) | undefined;
  maxAttempts: number | undefined;
}

/**
 * Checks a policy and turns it into the pieces a task runs with; an invalid one throws a TypeError naming the field.
 * @example resolveRetryPolicy({ wait: "2s", backoff: 2 }).backoff(3) // 8000
 */
export function resolveRetryPolicy(policy: RetryPolicy, random: () => number = Math.random): ResolvedRetryPolicy {
  const parsed = v.safeParse(RetryPolicySchema, policy);
  if (!parsed.success) {
    throw new TypeError(describeIssues(parsed.issues));
  }
  if (typeof policy.retryOn === "function" && /^class\b/.test(Function.prototype.toString.call(policy.retryOn))) {
    throw new TypeError(`retryOn: give error classes as an array, [${policy.retryOn.name}], or a predicate`);
  }
  const p = parsed.output;
  const wait = p.wait ?? parseDuration(RETRY_POLICY_DEFAULTS.wait);
  const factor = p.backoff ?? RETRY_POLICY_DEFAULTS.backoff;
  const maxWait = Math.min(p.maxWait ?? POLICY_MAX_DELAY_MS, POLICY_MAX_DELAY_MS);
  const jitter = p.jitter ?? RETRY_POLICY_DEFAULTS.jitter;
  return {
    backoff: (attempt) => {
      const ms = Math.min(maxWait, wait * factor ** Math.max(0, attempt - 1));
      return jitter ? ms * (0.5 + random() * 0.5) : ms;
    },
    retryOn: errorFilter(policy.retryOn),
    maxAttempts: p.maxAttempts,
  };
}

function errorFilter(retryOn: RetryPolicy["retryOn"]): ((error: unknown) => boolean) | undefined {
  if (retryOn === undefined) return undefined;
  if (typeof retryOn === "function") return retryOn;
  const classes = [...retryOn];
  return (error) => classes.some((c) => error instanceof c);
}

/** What a task or a step retries with, resolved: its backoff, its error filter and (for a step) its attempt budget. */
export interface RetryRules {
  backoff: BackoffPolicy | undefined;
  retryOn: ((error: unknown) => boolean) | undefined;
  /** Attempts including the first; past it nothing is retried. Omitted for a job: its budget is the database's to count. */
  maxAttempts?: number;
}

/**
 * The one retry decision of a failed attempt, for jobs and workflow steps alike: the delay before the next
 * attempt, or null when `error` is not retried. A `Retry` is retried after its own delay; what `exempt` accepts
 * (the caller's own verdicts, such as a timeout) is retried whatever `retryOn` says; a `retryOn` that throws
 * counts as yes. Cancel, Snooze and Fail are the caller's to handle before.
 * @example retryDelay(new Error("down"), 2, { backoff: () => "10s", retryOn: undefined }) // 10000
 */
export function retryDelay(error: unknown, attempt: number, rules: RetryRules, exempt?: (error: unknown) => boolean): number | null {
  const retryable = error instanceof Retry || !rules.retryOn || exempt?.(error) === true || acceptedBy(rules.retryOn, error);
  if (!retryable || attempt >= (rules.maxAttempts ?? Infinity)) return null;
  return error instanceof Retry ? error.delayMs : backoffMs(attempt, rules.backoff);
}

/** The filter's answer; a filter that throws retries (it cannot be trusted to refuse). */
function acceptedBy(retryOn: (error: unknown) => boolean, error: unknown): boolean {
  try { return Boolean(retryOn(error)); } catch { return true; }
}
