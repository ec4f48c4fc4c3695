import { sql, type SQL } from "drizzle-orm";

/**
 * The CTE names one fragment defines and a fragment in another file reads, within the claim and settle
 * statements. Both sides name the constant here, so a rename is one edit and a reader finds every use;
 * docs/sql holds the statements as sent, and test/repo/rendered-sql.test.ts keeps them from drifting.
 */
export const CTE = {
  /** Defined by the claim (claim.ts): the jobs it leased. Read by `statisticsStale` (analyze.ts) and `invocationSeenCte` (register-worker.ts). */
  claimed: "claimed",
  /** Defined by the claim (claim.ts): the plain scan's candidates. Read by its `candidates`, and a fair claim's (`FairWay.candidates`, fair.ts) through what it is offered. */
  unlimitedCandidates: "unlimited_candidates",
  /** Defined by the claim (limited-candidates.ts) when limits exist: each limit key's candidates. Read by `backlogCte` (backlog.ts). */
  limitedCandidates: "limited_candidates",
  /** Defined by `recoverExpiredLeasesCtes` (recover.ts): the jobs recovered from lapsed leases. Read by the claim's report (claim.ts). */
  recovered: "recovered",
  /** Defined by the settle (settle.ts): the outcomes it recorded. Read by `invocationDoneCte` (mark-invocation-done.ts). */
  done: "done",
  /** The registry's CTE a claim or settle carries (register-worker.ts, mark-invocation-done.ts): at most one per statement. */
  registrySeen: "akadze_seen",
} as const;

/** A shared CTE's name in a statement. */
export function cte(name: keyof typeof CTE): SQL {
  return sql.raw(CTE[name]);
}
