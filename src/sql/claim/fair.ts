import { sql, type SQL } from "drizzle-orm";
export { splitFairKey, storedFairKey } from "../../core/fair-key.js";

/**
 * Fair claims: a claim shares its batch across the fairness keys with due jobs (`EnqueueOptions.fairKey`),
 * so one key's backlog never makes another key wait behind it; a key can be two-level (a tenant, then a sub-key
 * such as a repository: `fairSubKey`), and a tenant can weigh more than another (`setFairWeight`).
 *
 * Two ways, chosen per process: by turns (fair-turns.ts: each keyed job's turn given as it enters the queue, read
 * through one index), and, once the process has met sub-keys, the walk over tenants and their sub-keys
 * (fair-walk.ts; turns are per stored key, so by turns a tenant's sub-keys would each take a key's turn). This
 * file holds what both share.
 *
 * A two-level key is stored as one text, `tenant \x01 sub-key` (`storedFairKey`); a tenant's keys are then the
 * range from `tenant` to `tenant \x02` of `jobs_fair_idx`, which is ordered by bytes (`collate "C"`) whatever the
 * database's collation. Names cannot hold those two characters.
 */

/** What a fair claim's scans read of the claim (claim.ts): its clock, its filters, its batch. */
export interface FairScan { now: SQL; eligible: SQL; unlimited: SQL; stop: SQL; batchSize: number }

/**
 * One way of a fair claim, as the claim composes it: by turns (`fairByTurns`, fair-turns.ts) or the walk
 * (`fairByWalk`, fair-walk.ts). The claim asks which, and never again.
 */
export interface FairWay {
  /** The CTEs before the plain scan, ending with `fair_candidates`: the keyed jobs the way offers. */
  before: SQL[];
  /**
   * The plain scan's exclusion of those it reads too (for its where clause: it reads only jobs without a turn) and
   * how many jobs it offers (an outer limit).
   */
  plainScan: { exclude: SQL; room: SQL };
  /** The body of the `candidates` CTE: `offered` (the other scans' candidates, each a select) with the way's, ranked and cut to the batch. */
  candidates(offered: SQL[]): SQL;
  /** The CTEs after the claimed jobs' update: the cursor moved. */
  after: SQL[];
  /** The way's entries in the claim's answer, each `, 'name', value`. */
  report: SQL;
}

/** `column` as jobs_fair_idx orders it: by bytes. */
export function byBytes(column: SQL): SQL {
  return sql`${column} collate "C"`;
}

/** The SQL condition: the stored key `column` belongs to `tenant` (its own key or one of its sub-keys). */
export function ofTenant(column: SQL, tenant: SQL): SQL {
  return sql`(${byBytes(column)} >= ${tenant} and ${byBytes(column)} < ${tenant} || chr(2))`;
}

/**
 * Claim order, of columns under `alias`: higher priority first, then the earliest due, then the oldest; a fair
 * claim puts each job's round within its tenant and its tenant's walk position (the plain scan's last) after priority.
 */
export function claimOrder(fair: boolean, alias = ""): SQL {
  const a = sql.raw(alias === "" ? "" : `${alias}.`);
  return fair ? sql`${a}priority desc, ${a}fair_rank, ${a}walk nulls last, ${a}run_at, ${a}id` : sql`${a}priority desc, ${a}run_at, ${a}id`;
}

/**
 * Whether any queued job has a fairness key: the next claim is fair only then. Asked for the first key in
 * index order, so it is one probe of jobs_fair_idx whatever the statistics say (an `exists` may scan the table).
 */
export const ANY_FAIR_JOB = sql`(select fair_key from akadze.jobs where state = 'queued' and fair_key is not null order by fair_key collate "C" limit 1) is not null`;

/** The most keys one claim walks: its batch size, as a literal (a prepared claim keeps one plan). */
export function walkBound(batchSize: number): SQL {
  return sql.raw(String(Math.max(1, Math.floor(batchSize))));
}

/**
 * The columns every scan offers to a claim's `candidates` (the plain scan, the limited keys', the jobs to cancel,
 * the fair ways' turns and walks), in the order their union reads them: `stop`, whether the job must be cancelled.
 */
export function candidateColumns(stop: SQL, limited = false): SQL {
  return sql`j.id, j.priority, j.run_at, ${stop} as stop, ${sql.raw(String(limited))} as limited, j.fair_key, j.fair_tag`;
}

/** Turn order, as jobs_tag_idx holds it: a scan of due keyed jobs `j` in it reads the index in order. */
export const TURN_ORDER = sql`j.priority desc nulls last, j.fair_tag, j.run_at, j.id`;
