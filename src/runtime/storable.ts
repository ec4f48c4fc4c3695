import { cleanJson, MAX_RESULT_BYTES } from "../core/json.js";
import type { Outcome } from "../sql/settle/settle.js";
import { boundedEntry, noteEntry } from "../core/error-entry.js";
import { MAX_SPAN_MS } from "../core/validate.js";

/**
 * The outcome as the completion statement can store it: strings cleaned, delays clamped to
 * [0, MAX_SPAN_MS], a result over MAX_RESULT_BYTES refused as this job's error.
 */
export function storable(outcome: Outcome, now: () => Date): Outcome {
  const o: Outcome = { ...outcome };
  if (o.delayMs !== undefined) o.delayMs = Number.isFinite(o.delayMs) ? Math.min(MAX_SPAN_MS, Math.max(0, o.delayMs)) : MAX_SPAN_MS;
  if (o.error) o.error = boundedEntry(o.error);
  if (o.kind === "succeeded" && o.result !== undefined && o.result !== null) {
    const result = cleanJson(o.result);
    const size = new TextEncoder().encode(JSON.stringify(result)).length;
    if (size > MAX_RESULT_BYTES) {
      return { id: o.id, kind: "fail", attempt: o.attempt, error: unstorableEntry(outcome, now(), `the result is ${size} bytes of JSON, over the ${MAX_RESULT_BYTES}-byte cap: store large results in your own tables`) };
    }
    o.result = result;
  }
  return o;
}

/** The error recorded for a job whose outcome the database refused, at the outcome's own time (else `now`, the invocation's clock). */
export function unstorableEntry(outcome: Outcome, now: Date, message: string): NonNullable<Outcome["error"]> {
  const entry = noteEntry("OutcomeNotStorable", message, outcome.error?.attempt ?? outcome.attempt ?? 0, now);
  return outcome.error?.at ? { ...entry, at: outcome.error.at } : entry;
}
