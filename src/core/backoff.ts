import { tryParseDuration, type Duration } from "./duration.js";

/** A task's retry delay for the attempt that just failed (1 = the first run). Cheap and synchronous. @example const linear: BackoffPolicy = (attempt) => attempt * 60_000; */
export type BackoffPolicy = (attempt: number) => Duration;

/** The default curve tops out here. */
export const DEFAULT_BACKOFF_MAX_MS = 300_000;
/** A task policy's delays are clamped to this. */
export const POLICY_MAX_DELAY_MS = 365 * 86_400_000;

/** Default backoff: 2^(attempt-1) s, at most 300 s, with jitter uniform in [50 %, 100 %]. @example defaultBackoffMs(3) // between 2000 and 4000 */
export function defaultBackoffMs(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(DEFAULT_BACKOFF_MAX_MS, 1000 * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (0.5 + random() * 0.5));
}

/**
 * A task policy's delay clamped to [0, 365 days]; the default curve when the policy throws or returns
 * no Duration at all. A number out of range (negative, Infinity) is clamped, not replaced: the policy
 * said "no wait" or "as long as allowed", and the seed bounds it rather than overruling it. Only NaN,
 * which says nothing, falls back.
 * @example backoffMs(2, () => -5000) // 0
 */
export function backoffMs(attempt: number, policy?: BackoffPolicy, random?: () => number): number {
  if (policy) {
    let ms: number | undefined;
    try { ms = policyDelayMs(policy(attempt)); } catch { ms = undefined; }
    if (ms !== undefined) return Math.min(POLICY_MAX_DELAY_MS, Math.max(0, ms));
  }
  return defaultBackoffMs(attempt, random);
}

function policyDelayMs(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isNaN(value) ? undefined : value;
  return tryParseDuration(value);
}
