import type { SQL } from "drizzle-orm";

// The seam between the core claim (claim.ts: pick due jobs, lease them) and what rides on it in the same
// statement (runtime/riders.ts lists the riders; each builds its SQL from these).

/**
 * What the core claim shares with what rides on it: its clock, its owner and its condition for a claimable job
 * (a rider that counts due jobs, such as the fan-out's backlog, counts them as the claim would).
 */
export interface ClaimCore {
  now: SQL;
  owner: string;
  /** A claimable job `j` of this claim's tasks and queues: queued, due, in an unpaused queue (a due job to be cancelled too). */
  eligible: SQL;
  /** A job `j` no limit applies to. */
  unlimited: SQL;
  /** The claim carries the limit CTEs (`limitedCandidates` exists). */
  limits: boolean;
}

/**
 * What one rider adds to one claim statement (see runtime/riders.ts for the list). Its CTEs run in the claim's
 * snapshot and must not touch the queued or running jobs the core moves.
 */
export interface RideSql {
  /** CTEs placed before the core's. */
  before?: SQL[];
  /** CTEs placed after the core's `claimed` (the jobs the claim took, `id` first), which they may read. */
  after?: SQL[];
  /** Values reported as `name: expression`: the answer carries each under its name. */
  report?: Record<string, SQL>;
}
