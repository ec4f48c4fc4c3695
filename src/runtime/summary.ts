import type { ClaimResult } from "../sql/claim.js";
import type { CompletedJob } from "../sql/complete.js";
import type { RunSummary } from "./run-options.js";

/** A summary with nothing done yet. */
export function emptySummary(id: string): RunSummary {
  return { id, claimed: 0, succeeded: 0, retried: 0, snoozed: 0, failed: 0, cancelled: 0, released: 0,
    recovered: 0, rateLimited: 0, lost: 0, tooLongForBudget: [], problems: [], roundTrips: 0, durationMs: 0 };
}

/** Counts what a claim did: jobs claimed, and those it recovered, cancelled, ended `rate_limited` or failed as too large. */
export function countClaim(s: RunSummary, claim: ClaimResult): void {
  s.claimed += claim.claimed.length;
  s.recovered += claim.recovered.length;
  s.cancelled += claim.cancelled.length;
  s.rateLimited += claim.rateLimited.length;
  s.failed += claim.tooLarge.length;
}

/** Counts the jobs a settle statement moved into the summary, and lists each failed or retried run with its error. */
export function countCompleted(s: RunSummary, done: CompletedJob[]): void {
  for (const d of done) {
    if (d.to === "succeeded") s.succeeded++;
    else if (d.to === "failed") s.failed++;
    else if (d.to === "cancelled") s.cancelled++;
    else if (d.kind === "release") s.released++;
    else if (d.kind === "snooze") s.snoozed++;
    else s.retried++;
    if (d.error && (d.to === "failed" || (d.to === "queued" && d.kind !== "snooze"))) {
      s.problems.push({ jobId: d.id, task: d.task, queue: d.queue, attempt: d.attempt, to: d.to as "failed" | "queued", error: d.error });
    }
  }
}
