import { sql, type SQL } from "drizzle-orm";
import { notRateLimited, rateLimitedCtes, rateLimitedTransitions } from "./limit-wait.js";
import { archiveCtes } from "../history/archive.js";
import { mustCancel } from "../time.js";
import { ownerLeaseCte } from "./owner-lease.js";
import { movedJobsJson, noMovedJobs } from "../control/changed-job.js";
import { limitedCandidatesCtes } from "./limited-candidates.js";
import { sizedCtes } from "./size-cap.js";
import { ANY_FAIR_JOB, candidateColumns, claimOrder } from "./fair.js";
import { fairByWalk } from "./fair-walk.js";
import { fairByTurns } from "./fair-turns.js";
import { cte } from "./cte-names.js";
import type { ClaimCore, RideSql } from "./ride.js";

export type { ClaimCore, RideSql } from "./ride.js";

export interface ClaimParams {
  owner: string;
  /** The statement's clock (`timestamp(...)`). */
  now: SQL;
  leaseMs: number;
  batchSize: number;
  /** Task names this app can run (and that fit the budget); other jobs are left for others. */
  tasks: string[];
  /** Queues to claim from; `null` claims from every queue. */
  queues: string[] | null;
  /**
   * The first this-many claimed jobs (in claim order, no limit applying) are handed to slots at once:
   * marked started in this statement. The rest wait in the invocation's local queue until a later statement
   * starts them, so a crash charges only what may have run.
   */
  startCount: number;
  /**
   * Also take jobs whose limit key has a limit, each key offering at most what it has room for. Their slot
   * and token are taken when they start (see start.ts). `false` skips the limit CTEs: the claim then takes
   * only jobs no limit applies to (cheap, and safe: a limited job is never taken by it).
   */
  limits: boolean;
  /**
   * Share the batch across fairness keys (`fair.ts`): each key with due jobs gets its turn. `false` claims in
   * plain order the jobs without a turn (without a key, or parked): keyed jobs with one are only a fair claim's,
   * which the process sends once the claim reports them (`fair`).
   */
  fair?: boolean;
  /**
   * `false`: take no job with a fairness key (a process that does not know yet whether any are queued leaves them
   * to its next claim, which shares them fairly; the claim's `fair` report tells). Default true.
   */
  keyed?: boolean;
  /**
   * Also cancel the queued jobs that must be (`mustCancel`: a cancel request, an expiry passed), due or not (the
   * default). `false` leaves out those CTEs (a delete and the history's insert, which cost a claim of a few jobs
   * about a third of its planning): a due job that must be cancelled is then left queued, neither claimed nor
   * cancelled, for the next claim with them. Every claim reports whether a queued job has such a moment (`stops`).
   */
  stops?: boolean;
  /**
   * With `fair`: walk the tenants and their sub-keys (`fair-walk.ts`). Off, the claim goes by turns
   * (`fair-turns.ts`) and reports whether it met a sub-key (`fairSubKeys`), so a process walks once it has seen one.
   */
  fairSubKeys?: boolean;
  /**
   * With `fair` by turns: give the due parked keyed jobs their turns (`fair-turns.ts`). The claim reports whether any is
   * due (`fairParkedDue`), so a process sends these CTEs only after a claim saw one. Default true.
   */
  unpark?: boolean;
  /**
   * With `fair` by turns: read on past the batch's turns for the keys whose urgent jobs took their earliest ones
   * (`fair-turns.ts`). The claim reports whether the turns it read spanned priorities (`fairPriorities`). Default true.
   */
  fairPriorities?: boolean;
  /**
   * With `fair` by turns: offer the due jobs without a turn too (the plain scan: jobs without a key, keyed jobs
   * parked till due). The claim reports whether any is due (`plainDue`), so a process whose queued jobs all have
   * their turns sends a claim of one scan, the turns. Default true.
   */
  plain?: boolean;
  /**
   * The most bytes of args one claim may return (over neon-http, whose responses are capped), or null.
   * Jobs past it wait for the next claim; a job whose args alone exceed it fails with a sentence naming the cap.
   */
  maxBytes?: number | null;
  /** The app traces: each claimed job comes with the trace context it was enqueued in (`ClaimedJob.trace`). */
  traced?: boolean;
}

/** One queue is an equality, so the planner can walk jobs_claim_idx (queue first) in claim order. */
function queueCondition(queues: string[] | null): SQL {
  if (queues === null) return sql`true`;
  if (queues.length === 1) return sql`j.queue = ${queues[0]}`;
  return sql`j.queue in (select jsonb_array_elements_text(${JSON.stringify(queues)}::jsonb))`;
}

/** A job `j` of the claim's tasks, in its queues, none of them paused. */
function ofThisClaim(p: ClaimParams): SQL {
  return sql`j.task = any(array(select jsonb_array_elements_text(${JSON.stringify(p.tasks)}::jsonb)))
        and ${queueCondition(p.queues)}
        and j.queue not in (select name from akadze.queues where paused)`;
}

/** The plain scan's jobs `j`: queued, without a turn (jobs_claim_idx's and jobs_due_idx's rows). */
const PLAIN = sql`j.state = 'queued' and j.fair_tag is null`;

/**
 * The priorities of the plain scan's jobs (`PLAIN`), highest first, one probe each (a loose scan of
 * jobs_claim_idx for one queue, of jobs_due_idx otherwise), read as the plain scan asks for them.
 */
function queuedPriorities(queues: string[] | null): SQL {
  const queue = queues?.length === 1 ? sql`and j.queue = ${queues[0]}` : sql``;
  return sql`(with recursive p(priority) as (
        (select j.priority from akadze.jobs j where ${PLAIN} ${queue} order by j.priority desc nulls last limit 1)
        union all
        select (select j.priority from akadze.jobs j where ${PLAIN} ${queue} and j.priority < p.priority
          order by j.priority desc nulls last limit 1)
        from p where p.priority is not null
      ) select priority from p where priority is not null)`;
}

/**
 * Whether a job of the plain scan (`PLAIN`) is due at `now`, whatever its task or queue: one probe of jobs_due_idx
 * a priority. A fair claim by turns leaves the plain scan out of the next claim while none is (`ClaimParams.plain`).
 */
function plainJobDue(now: SQL): SQL {
  return sql`exists (select 1 from ${queuedPriorities(null)} q
      where exists (select 1 from akadze.jobs j where ${PLAIN} and j.priority = q.priority and j.run_at <= ${now}))`;
}

/**
 * A queued job `j` that must be cancelled (`mustCancel`) and is not due yet, as jobs_stop_idx finds it: due ones
 * are found by the scans of due jobs, which mark them `stop`.
 */
function stopsNotDue(now: SQL): SQL {
  return sql`(case when j.cancel_requested then '-infinity'::timestamptz else j.expires_at end) <= ${now}
        and j.state = 'queued' and (j.expires_at is not null or j.cancel_requested) and j.run_at > ${now}`;
}

/** Whether any queued job has a moment it must be cancelled at (a cancel request, an expiry): jobs_stop_idx's rows. */
const ANY_STOP_JOB = sql`exists (select 1 from akadze.jobs where state = 'queued' and (expires_at is not null or cancel_requested))`;

/**
 * The most rows a claim's scan locks, written into the text: `batchSize` rounded up to a power of two. A
 * literal limit lets Postgres settle on one generic plan for a prepared claim after a few runs (with a
 * parameter it plans every claim afresh, as long as the claim runs), and rounding keeps the texts few;
 * `candidates` then cuts the batch to `batchSize`.
 */
function lockLimit(batchSize: number): SQL {
  return sql.raw(String(2 ** Math.ceil(Math.log2(Math.max(1, batchSize)))));
}

/**
 * Text only the claim statement holds, whatever rides on it (its lease of the batch): how the tests, the bench and
 * scripts/render-sql.ts tell a claim among the statements sent.
 */
export const CLAIM_MARK = "update akadze.jobs j set state = 'running', attempt = j.attempt + 1";

/** The core's shared fragments for `p` (what riders may build on). */
export function claimCore(p: ClaimParams): ClaimCore {
  const now = p.now;
  return {
    now, owner: p.owner, limits: p.limits,
    eligible: sql`j.state = 'queued' and j.run_at <= ${now} and ${ofThisClaim(p)}`,
    // Without the limit CTEs a job qualifies only if no limit applies to it; a key with a limit row waits for a full claim.
    unlimited: sql`(j.limit_key is null or not exists (select 1 from akadze.limits l where l.key = j.limit_key))`,
  };
}

/**
 * One atomic statement: the core picks due jobs in priority order (fairly, by limit keys, within a size cap)
 * from unpaused queues for the tasks given, leases them and marks the first `startCount` started, and turns due
 * jobs that were cancelled or expired into `cancelled`. What rides along (`rides`: recovery, schedules, the
 * registry...; see runtime/riders.ts) adds its CTEs before or after the core's and its values to the answer,
 * in the same round trip.
 */
export function claimJobsStatement(p: ClaimParams, rides: RideSql[] = []): SQL {
  const now = p.now;
  const { eligible: anyKey, unlimited } = claimCore(p);
  // (Keyed jobs left out of the scans of due jobs only: the riders count them and a limit's wait ends them as before.)
  const eligible = p.keyed === false ? sql`${anyKey} and j.fair_key is null` : anyKey;
  const before = rides.flatMap((r) => r.before ?? []).map((cte) => sql`${cte},`);
  const after = rides.flatMap((r) => r.after ?? []).map((cte) => sql`${cte},`);
  // The result is built as json, not jsonb: it is only sent, and json costs Postgres a third of jsonb to build.
  const report = rides.flatMap((r) => Object.entries(r.report ?? {})).map(([name, value]) => sql`, ${name}::text, ${value}`);
  const stop = mustCancel(now);
  const limited = p.limits ? limitedCandidatesCtes({ batchSize: p.batchSize, now, eligible, stop }) : [];
  const order = claimOrder(p.fair === true);
  // What the lease reads of each due job.
  const dueColumns = ["id", "start", "limited", ...(p.fair ? ["fair_rank", "walk"] : [])];
  // A fair claim reads the keys' turns (or, once the process has met sub-keys, walks the keys) first; its plain
  // scan then offers what the batch still lacks (fair-turns.ts, fair-walk.ts).
  const scan = { now, eligible, unlimited, stop, batchSize: p.batchSize };
  const fair = !p.fair ? null : p.fairSubKeys === true ? fairByWalk(scan) : fairByTurns({ ...scan, unpark: p.unpark !== false, priorities: p.fairPriorities !== false, claimed: cte("claimed") });
  // (By turns: the next claim leaves the plain scan out while no job of it is due.)
  const byTurns = fair !== null && p.fairSubKeys !== true;
  const plain = !byTurns || p.plain !== false;
  const lock = lockLimit(p.batchSize);
  const stops = p.stops !== false;
  // The plain scan's candidates, the limited keys' ones and the jobs to cancel before they are due: the batch is cut from these.
  const offered = [
    ...(plain ? [sql`select * from ${cte("unlimitedCandidates")}`] : []),
    ...(p.limits ? [sql`select * from ${cte("limitedCandidates")}`] : []),
    ...(stops ? [sql`select * from stops_not_due`] : []),
  ];
  return sql`
    with ${ownerLeaseCte(p.owner, now, p.leaseMs)}, ${sql.join(before, sql` `)} ${p.limits ? sql`${rateLimitedCtes({ eligible: anyKey, stop, now })},` : sql``}${fair ? sql`
    ${sql.join(fair.before, sql`, `)},` : sql``}
    -- Due jobs without a turn, priority by priority: each priority's are one range of the index (due time up to
    -- now), so jobs not due yet are never read, however many there are. Keyed jobs with a turn are a fair claim's
    -- (jobs_tag_idx); a plain claim reports them (\`fair\`) and the next claim is fair.
    ${plain ? sql`${cte("unlimitedCandidates")} as (${fair ? sql`select * from (` : sql``}
      select x.* from ${queuedPriorities(p.queues)} q cross join lateral (
        select ${candidateColumns(stop)}
        from akadze.jobs j
        where j.priority = q.priority and j.fair_tag is null and ${eligible} and ${unlimited}${fair ? sql` ${fair.plainScan.exclude}` : sql``}
        order by j.run_at, j.id
        limit ${lock}
        for update of j skip locked
      ) x
      limit ${lock}
    ${fair ? sql`) u limit ${fair.plainScan.room}` : sql``}),` : sql``}
    ${stops ? sql`-- The jobs to cancel that are not due yet (a limit or a fairness key makes no difference to them).
    stops_not_due as (
      select ${candidateColumns(sql`true`)}
      from akadze.jobs j
      where ${stopsNotDue(now)} and ${ofThisClaim(p)}
      limit ${lock}
      for update of j skip locked
    ),` : sql``}
    ${limited.length > 0 ? sql`${sql.join(limited, sql`, `)},` : sql``}
    candidates as (
      ${fair
        ? fair.candidates(offered)
        : sql`select * from (${sql.join(offered, sql` union all `)}) c
      order by ${order}
      limit ${p.batchSize}`}
    ),
    ${sizedCtes({ maxBytes: p.maxBytes, now, order: claimOrder(p.fair === true, "c") })},
    due as (
      select c.id, c.limited, row_number() over (order by c.limited, ${order}) <= ${p.startCount} and not c.limited as start${p.fair ? sql`, c.fair_rank, c.walk` : sql``}
      from candidates c where not c.stop ${p.limits ? sql`and ${notRateLimited(sql`c.id`)}` : sql``}
        and c.id not in (select id from oversized)
    ),
    ${cte("claimed")} as (
      -- (The lease is the owner's row, owner_leased above: the job's own expiry stays null, unindexed.)
      ${sql.raw(CLAIM_MARK)}, lease_owner = ${p.owner},
        lease_expires_at = null, started_at = case when d.start then ${now} end,
        -- A claimed debounced job takes no more payloads, even if it goes back to queued: later ones start a new job.
        debounce_key = null
      -- (The batch as arrays, unnested: each job is read once, by its key. A join of the CTE itself let the planner
      -- pick a whole-table scan hashed against a batch it estimated at a quarter of the table, or, with the batch
      -- as an array condition too, read the whole batch once per job when it estimated the batch at one row.)
      from (select ${sql.raw(dueColumns.map((c) => `array_agg(${c}) as ${c}`).join(", "))} from due) b,
        unnest(${sql.raw(dueColumns.map((c) => `b.${c}`).join(", "))}) as d(${sql.raw(dueColumns.join(", "))})
      where j.id = d.id
      returning j.id, j.task, j.queue, j.args, j.attempt, j.max_attempts, j.priority, j.run_at, d.start, d.limited${p.fair ? sql`, d.fair_rank, d.walk, j.fair_key` : sql``}${p.traced ? sql`, j.trace_context` : sql``}
    ),${fair ? sql`
    ${sql.join(fair.after, sql`, `)},` : sql``}
    ${sql.join(after, sql` `)}
    ${stops ? sql`-- Cancelled or expired before they ran: out of the queue table, into the history.
    cancelled as (
      delete from akadze.jobs j using unnest(array(select id from candidates where stop)) as c(id) where j.id = c.id
      returning j.id, j.task, j.queue, j.args, 'cancelled'::text as state, j.priority, j.attempt, j.max_attempts, j.run_at, j.expires_at,
        j.unique_key, j.limit_key, j.limit_wait_ms, j.cancel_requested, j.errors, j.result, j.created_at, j.started_at, ${now} as finished_at, j.fair_key, j.trace_context
    ),
    ${sql.join(archiveCtes("cancelled", sql`select * from cancelled`, "history"), sql`, `)}` : noMovedJobs("cancelled")}
    select json_build_object(
      -- (Positional arrays, see ClaimedRow: an object per job cost Postgres twice as much to build.)
      'claimed', coalesce((select json_agg(json_build_array(id, task, queue, args, attempt, max_attempts, priority, start, limited${p.traced ? sql`, trace_context` : sql``})
        order by ${order}) from ${cte("claimed")}), '[]'::json),
      'cancelled', ${movedJobsJson("cancelled", "queued", sql`'cancelled'`)},
      'rateLimited', ${p.limits ? rateLimitedTransitions() : sql`'[]'::json`},
      'tooLarge', ${movedJobsJson("too_large", "queued", sql`'failed'`)},
      'more', exists (select 1 from oversized where not alone),
      'limits', exists (select 1 from akadze.limits),
      'stops', ${ANY_STOP_JOB},
      'fair', ${ANY_FAIR_JOB}${fair ? fair.report : sql``}${byTurns ? sql`, 'plainDue', ${plainJobDue(now)}` : sql``}${sql.join(report, sql``)}
    ) as r`;
}
