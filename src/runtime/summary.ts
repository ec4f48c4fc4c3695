import type { ClaimResult } from "../sql/claim/claim.js";
import type { SQL } from "drizzle-orm";
import type { CompletedJob } from "../sql/settle/settle.js";
import type { RunSummary } from "./run-options.js";

/** A summary with nothing done yet. */
export function emptySummary(id: string): RunSummary {
  return { id, claimed: 0, succeeded: 0, retried: 0, snoozed: 0, failed: 0, cancelled: 0, released: 0,
    recovered: 0, rateLimited: 0, abandoned: 0, lost: 0, unconfirmed: 0, tooLongForBudget: [], problems: [], roundTrips: 0, durationMs: 0 };
}

/** The counts a summary adds up. */
export const COUNTED = ["claimed", "succeeded", "retried", "snoozed", "failed", "cancelled", "released", "recovered", "rateLimited", "abandoned", "lost", "unconfirmed", "roundTrips"] as const;
export type Counts = Record<(typeof COUNTED)[number], number>;

/** What a summary gained since the last `take`: its counts' differences and its new problems, as a summary of its own. */
export class SummaryDeltas {
  private counted: Partial<Counts> = {};
  private problems = 0;
  constructor(private readonly summary: RunSummary) {}

  take(): RunSummary & Counts {
    const s = this.summary;
    const delta = Object.fromEntries(COUNTED.map((k) => [k, s[k] - (this.counted[k] ?? 0)])) as Counts;
    this.counted = Object.fromEntries(COUNTED.map((k) => [k, s[k]]));
    const problems = s.problems.slice(this.problems);
    this.problems = s.problems.length;
    return { ...s, ...delta, problems };
  }
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

/**
 * Jobs done that no registry update has counted yet (completed alone, or by settles that did not carry the
 * registry): the next settle that carries it takes them.
 */
export class Unreported {
  private count = 0;
  private carrying = false;

  add(n: number): void { this.count += n; }

  /** The settle's extra CTEs, given the count; when it carries the registry, the count is its. */
  take(carry: (count: number) => SQL[]): SQL[] {
    const ctes = carry(this.count);
    this.carrying = ctes.length > 0;
    if (this.carrying) this.count = 0;
    return ctes;
  }

  /** What is left uncounted, now counted by the caller. */
  drain(): number {
    const n = this.count;
    this.count = 0;
    return n;
  }

  /** Told what the settle did: counted here unless its own registry update counted it. */
  settled(jobs: CompletedJob[]): void {
    if (!this.carrying) this.count += jobs.filter((j) => j.kind !== "release").length;
  }
}
