// The row designs `bench/row-designs.ts` measures: for each, what it changes in akadze's migrated schema and the
// four raw statements of a job's life (enqueue a chunk, claim a batch, renew the batch's leases, settle it as
// succeeded). Every claim has akadze's shape: due queued jobs in priority order, `for update skip locked`, a limit.
// Parameters: enqueue $1 = a JSON array of args; claim $1 = batch, $2 = owner; heartbeat and settle
// $1 = the ids, $2 = the owner. Only designs to measure: the product's schema is src/schema.ts.
import { FINISHED_COLUMN_NAMES } from "../src/sql/history/archive.js";

export interface RowDesign {
  /** Short name, as the tables print it. */
  name: string;
  /** One line: what the design is. */
  summary: string;
  /** Statements run once on a freshly migrated database, before any job. */
  setup: string[];
  enqueue: string;
  claim: string;
  heartbeat: string;
  settle: string;
  /** The design's extra table that must be empty once every job is settled, if any. */
  leaseTable?: string;
}

const LEASE = "interval '30 seconds'";
const ENQUEUE = "insert into akadze.jobs (task, args) select 'bench.noop', value from jsonb_array_elements($1::jsonb)";

/** A succeeded job's history row from a deleted row `j` (attempt and started_at from `attempt`, `started`). */
function historyRow(attempt = "j.attempt", started = "j.started_at"): string {
  return `j.id, j.task, j.queue, j.args, 'succeeded'::text as state, j.priority, ${attempt} as attempt, j.max_attempts, j.run_at,
    j.expires_at, j.unique_key, j.limit_key, j.limit_wait_ms, j.cancel_requested, j.errors, j.result, j.created_at,
    ${started} as started_at, now() as finished_at, j.fair_key, j.trace_context`;
}

const TO_HISTORY = `insert into akadze.job_history (${FINISHED_COLUMN_NAMES}) select ${FINISHED_COLUMN_NAMES} from moved`;

// A: today's table. The claim changes `state` (in every partial index's predicate) and the lease columns, so
// its update is never HOT: a new row version, and new entries in jobs_pkey, jobs_lease_idx and jobs_owner_idx.
const TODAY_CLAIM = `
  update akadze.jobs j set state = 'running', attempt = j.attempt + 1, lease_owner = $2, lease_expires_at = now() + ${LEASE}, started_at = now()
  where j.id in (select id from akadze.jobs where state = 'queued' and run_at <= now() order by priority desc, run_at, id
                 for update skip locked limit $1)
  returning j.id, j.args`;
const TODAY_HEARTBEAT = `update akadze.jobs set lease_expires_at = now() + ${LEASE}
  where id = any($1::bigint[]) and state = 'running' and lease_owner = $2`;
const TODAY_SETTLE = `with moved as (
    delete from akadze.jobs j where j.id = any($1::bigint[]) and j.state = 'running' and j.lease_owner = $2
    returning ${historyRow()})
  ${TO_HISTORY}`;

const today: RowDesign = {
  name: "A today",
  summary: "akadze.jobs as migrated; claim updates state and lease; heartbeat updates lease_expires_at; settle moves the row to the history",
  setup: [], enqueue: ENQUEUE, claim: TODAY_CLAIM, heartbeat: TODAY_HEARTBEAT, settle: TODAY_SETTLE,
};

// B1: the lease in a narrow table of its own. The job row is never updated: the claim locks it (skip locked) and
// inserts (job_id, owner, expires_at, attempt, started_at); the scan skips leased jobs by an anti-join on the
// leases' primary key. A claimer whose snapshot predates another's commit may lock a row the other just leased:
// `on conflict do nothing` drops it, and only the leases inserted are returned.
const leaseTable: RowDesign = {
  name: "B1 lease table",
  summary: "akadze.leases (job_id pk, owner, expires_at, attempt, started_at; index on expires_at); claim = row lock + lease insert, " +
    "scan skips leased jobs by anti-join; heartbeat updates the lease; settle deletes the lease and moves the job",
  setup: [
    `create table akadze.leases (job_id bigint primary key, owner text not null, expires_at timestamptz not null,
       attempt integer not null, started_at timestamptz)`,
    "create index leases_expires_idx on akadze.leases (expires_at)",
  ],
  enqueue: ENQUEUE,
  claim: `
    with picked as (
      select j.id, j.attempt from akadze.jobs j
      where j.state = 'queued' and j.run_at <= now() and not exists (select 1 from akadze.leases l where l.job_id = j.id)
      order by j.priority desc, j.run_at, j.id
      for update of j skip locked limit $1),
    leased as (
      insert into akadze.leases (job_id, owner, expires_at, attempt, started_at)
      select id, $2, now() + ${LEASE}, attempt + 1, now() from picked
      on conflict (job_id) do nothing
      returning job_id)
    select j.id, j.args from akadze.jobs j join leased l on l.job_id = j.id`,
  heartbeat: `update akadze.leases set expires_at = now() + ${LEASE} where job_id = any($1::bigint[]) and owner = $2`,
  // The job row first, then its lease: a claim whose snapshot predates the lease may hold the job row's lock and
  // be about to insert the same lease; deleting the lease first made that claim wait for the settle and the
  // settle for the claim (a deadlock, seen here). With the job first, the settle waits for the claim, whose
  // insert meets the committed lease and does nothing.
  settle: `with moved as (
      delete from akadze.jobs j using akadze.leases g where j.id = any($1::bigint[]) and g.job_id = j.id and g.owner = $2
      returning ${historyRow("g.attempt", "g.started_at")}),
    gone as (delete from akadze.leases where job_id in (select id from moved)),
    ${TO_HISTORY.replace("insert", "archived as (insert")})
    select 1 from moved`,
  leaseTable: "akadze.leases",
};

// B2: a HOT claim. jobs_lease_idx and jobs_owner_idx go, `state` stays 'queued' while a job runs (running means a
// lease owner), so the claim and the heartbeat change only columns no index names, and with room on the page
// (fillfactor) both are HOT updates: no index entry at all. The claim's scan filters `lease_owner is null`
// from the heap; a concurrent claim's committed lease fails that recheck.
function hotClaim(fillfactor: number): RowDesign {
  return {
    name: `B2 HOT claim ff${fillfactor}`,
    summary: `jobs with fillfactor ${fillfactor}, without jobs_lease_idx and jobs_owner_idx; state stays queued, the claim sets only ` +
      "unindexed columns (lease_owner, lease_expires_at, attempt, started_at) and skips leased rows by a heap filter; heartbeat HOT too",
    setup: [
      `alter table akadze.jobs set (fillfactor = ${fillfactor})`,
      "drop index akadze.jobs_lease_idx", "drop index akadze.jobs_owner_idx",
    ],
    enqueue: ENQUEUE,
    claim: `
      update akadze.jobs j set attempt = j.attempt + 1, lease_owner = $2, lease_expires_at = now() + ${LEASE}, started_at = now()
      where j.id in (select id from akadze.jobs where state = 'queued' and lease_owner is null and run_at <= now()
                     order by priority desc, run_at, id for update skip locked limit $1)
      returning j.id, j.args`,
    heartbeat: `update akadze.jobs set lease_expires_at = now() + ${LEASE} where id = any($1::bigint[]) and lease_owner = $2`,
    settle: `with moved as (
        delete from akadze.jobs j where j.id = any($1::bigint[]) and j.lease_owner = $2 returning ${historyRow()})
      ${TO_HISTORY}`,
  };
}

// C: move on claim. The claim deletes the queued rows and inserts them into akadze.running (primary key, and
// narrow indexes on owner and expiry); the settle moves them from there to the history.
const RUNNING_COLUMNS = "id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key, " +
  "lease_owner, lease_expires_at, cancel_requested, errors, result, created_at, started_at, limit_wait_ms, fair_key, trace_context";
const moveOnClaim: RowDesign = {
  name: "C move on claim",
  summary: "akadze.running (jobs' columns; pk, index on lease_owner, index on lease_expires_at); claim = delete queued + insert running; " +
    "heartbeat updates running; settle = delete running + insert history",
  setup: [
    "create table akadze.running (like akadze.jobs including defaults)",
    "alter table akadze.running alter column id drop identity if exists",
    "alter table akadze.running add primary key (id)",
    "create index running_lease_idx on akadze.running (lease_expires_at)",
    "create index running_owner_idx on akadze.running (lease_owner)",
  ],
  enqueue: ENQUEUE,
  claim: `
    with picked as (
      select id from akadze.jobs where state = 'queued' and run_at <= now() order by priority desc, run_at, id
      for update skip locked limit $1),
    taken as (delete from akadze.jobs j using picked p where j.id = p.id returning j.*)
    insert into akadze.running (${RUNNING_COLUMNS})
    select id, task, queue, args, 'running', priority, attempt + 1, max_attempts, run_at, expires_at, unique_key, limit_key,
      $2, now() + ${LEASE}, cancel_requested, errors, result, created_at, now(), limit_wait_ms, fair_key, trace_context
    from taken
    returning id, args`,
  heartbeat: `update akadze.running set lease_expires_at = now() + ${LEASE} where id = any($1::bigint[]) and lease_owner = $2`,
  settle: `with moved as (
      delete from akadze.running j where j.id = any($1::bigint[]) and j.lease_owner = $2 returning ${historyRow()})
    ${TO_HISTORY}`,
  leaseTable: "akadze.running",
};

// D: today's statements with one index on running rows instead of two: jobs_owner_idx goes, jobs_lease_idx
// carries the owner as a second column (its readers, release-unheld and worker status, walk the running rows).
const oneRunningIndex: RowDesign = {
  ...today,
  name: "D one running index",
  summary: "today's table and statements; jobs_owner_idx and jobs_lease_idx merged into one (lease_expires_at, lease_owner) where state = 'running'",
  setup: [
    "drop index akadze.jobs_owner_idx", "drop index akadze.jobs_lease_idx",
    "create index jobs_lease_idx on akadze.jobs (lease_expires_at, lease_owner) where state = 'running'",
  ],
};

// E: the lease per engine, not per job. Every engine leases under an owner token of its own and renews all its
// jobs at once, so the expiry can live in one row per owner (akadze.owners): the heartbeat updates that row and only
// reads its jobs (for cancel requests, as today's does); jobs_lease_idx goes, jobs_owner_idx finds an expired
// owner's jobs. The claim still changes state (not HOT), but writes one index entry fewer and the heartbeat none.
const ownerLease: RowDesign = {
  name: "E lease per owner",
  summary: "akadze.owners (owner pk, expires_at); jobs_lease_idx dropped; claim = today's update (lease_expires_at unindexed, never renewed) " +
    "+ upsert of the owner's row; heartbeat = one owner row update, a read of its jobs, a release of the owner's unnamed lapsed jobs; settle as today",
  setup: [
    "drop index akadze.jobs_lease_idx",
    // (Today's schema has the table since this design was adopted; the setup then only drops the index.)
    "create table if not exists akadze.owners (owner text primary key, expires_at timestamptz not null)",
  ],
  enqueue: ENQUEUE,
  claim: `
    with renewed as (
      insert into akadze.owners (owner, expires_at) values ($2, now() + ${LEASE})
      on conflict (owner) do update set expires_at = excluded.expires_at)
    update akadze.jobs j set state = 'running', attempt = j.attempt + 1, lease_owner = $2, lease_expires_at = now() + ${LEASE}, started_at = now()
    where j.id in (select id from akadze.jobs where state = 'queued' and run_at <= now() order by priority desc, run_at, id
                   for update skip locked limit $1)
    returning j.id, j.args`,
  // (A job the engine forgot: today it lapses because no heartbeat names it. Here the owner's row lives on, so
  // the heartbeat gives back the owner's running jobs it did not name whose claim-time lease, still written by the
  // claim but no longer indexed nor renewed, has passed: a read of the owner's entries in jobs_owner_idx.)
  heartbeat: `with renewed as (update akadze.owners set expires_at = now() + ${LEASE} where owner = $2),
    forgotten as (
      update akadze.jobs j set state = 'queued', attempt = j.attempt - 1, lease_owner = null, lease_expires_at = null, started_at = null
      where j.lease_owner = $2 and j.state = 'running' and not (j.id = any($1::bigint[])) and j.lease_expires_at < now())
    select j.id, j.cancel_requested from akadze.jobs j where j.id = any($1::bigint[]) and j.state = 'running' and j.lease_owner = $2`,
  settle: TODAY_SETTLE,
};

export const ROW_DESIGNS: RowDesign[] = [today, leaseTable, hotClaim(50), hotClaim(30), moveOnClaim, oneRunningIndex, ownerLease];
