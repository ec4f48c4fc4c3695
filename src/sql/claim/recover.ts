import { sql, type SQL } from "drizzle-orm";
import { archiveCtes } from "../history/archive.js";
import { defaultBackoffSql } from "../time.js";
import { CTE, cte } from "./cte-names.js";
import { movedJobsJson } from "../control/changed-job.js";
import { prunedOwnersCte } from "./owner-lease.js";
import type { RideSql } from "./ride.js";

/** How many expired leases one claim recovers at most; the rest wait for the next claim. */
export const RECOVER_LIMIT = 500;
/** How many expired owners one claim recovers jobs of, and how many expired owner rows it deletes once they lease no job, at most. */
export const RECOVER_OWNERS_LIMIT = 50;

/** (A literal, not a parameter: the claim's text stays the same for every claim.) */
const LEASE_EXPIRED_MESSAGE = sql.raw("'the invocation running this job stopped renewing its lease'");
const LEASE_EXPIRED = (now: SQL) => sql`jsonb_build_array(jsonb_build_object('attempt', j.attempt,
  'at', ${now}, 'kind', 'LeaseExpired', 'message', ${LEASE_EXPIRED_MESSAGE}, 'stack', null))`;
/** The error a recovery's transition carries (`error` of the recovered rows): the entry it appended, or null. */
const LEASE_EXPIRED_NOTE = sql`json_build_object('kind', 'LeaseExpired', 'message', ${LEASE_EXPIRED_MESSAGE})`;

/**
 * The earliest expiry of a job leased with an expiry of its own (by a version before the owners table) that
 * passed at `now`, or null: one probe of jobs_lease_idx in its order, whatever the statistics say.
 */
function firstOwnExpiry(now: SQL): SQL {
  return sql`(select j.lease_expires_at from akadze.jobs j where j.state = 'running' and j.lease_expires_at is not null
        and j.lease_expires_at < ${now} order by j.lease_expires_at limit 1)`;
}

/**
 * `leasing (owner)`: the owners of running jobs, each once, as a loose scan of jobs_owner_idx (one probe per owner).
 */
const LEASING_OWNERS = sql`with recursive leasing(owner) as (
        select (select j.lease_owner from akadze.jobs j where j.state = 'running' order by j.lease_owner limit 1)
        union all
        select (select j.lease_owner from akadze.jobs j where j.state = 'running' and j.lease_owner > l.owner order by j.lease_owner limit 1)
        from leasing l where l.owner is not null
      )`;

/**
 * CTEs `recovered` and `recover_freed` for the claim's round trip: jobs whose lease expired go back to
 * `queued`. A job's lease is its owner's row in `akadze.owners` (owner-lease.ts): the jobs of an owner whose
 * row expired, or that has no row, are recovered, and the row is deleted once it leases no job. (A job leased
 * by a version before the owners table has an expiry of its own, renewed by that version's heartbeat: it is
 * recovered when that expiry passes, so old and new engines can run side by side during a deploy; an older
 * engine never recovers a newer one's jobs, whose own expiry is null.) A job whose body may have started
 * (`started_at` set when it was handed to a slot) spends its attempt and follows the default backoff, `failed`
 * on its last attempt (moved to the dead letters); a job that was only prefetched gets its attempt back and
 * stays due, so a crash never charges (or fails) a job that never ran. A claim never recovers the leases of its own engine
 * (`owner`): that engine still holds those jobs (a body that held the event loop past its lease, a heartbeat
 * that stalled) and its next claim or heartbeat renews them; only another engine takes them over.
 */
export function recoverExpiredLeasesCtes(now: SQL, owner: string): SQL[] {
  return [
    // Expired owners that still lease jobs (an owner row another engine is renewing right now is skipped, locked,
    // or re-read as renewed). Rows of engines that ended with nothing leased are only deleted, below: however many
    // there are, they never delay the recovery of an engine that died holding jobs.
    sql`recover_owners as (
      select o.owner from akadze.owners o where o.expires_at < ${now} and o.owner <> ${owner}
        and exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = o.owner)
      order by o.expires_at limit ${RECOVER_OWNERS_LIMIT} for update skip locked
    )`,
    // Owners that lease running jobs and have no row: recover_owners_ended below deletes a lapsed row once no
    // job its snapshot sees is leased to it, so a claim of that owner that committed after the snapshot was taken,
    // having begun more than a whole lease earlier (its renewal, which the delete re-reads, lapsed too), leaves
    // its jobs under an owner without a row, which nothing renews once the owner stops and recover_owners never
    // finds. They are recovered as a lapsed owner's. A loose scan of jobs_owner_idx: one probe per owner with
    // running jobs, and one of the owners' key each. (Jobs leased by a version before the owners table have no
    // owner row but an expiry of their own, and are left to it.)
    sql`recover_orphans as (
      ${LEASING_OWNERS}
      select l.owner from leasing l where l.owner is not null and l.owner <> ${owner}
        and not exists (select 1 from akadze.owners o where o.owner = l.owner)
      limit ${RECOVER_OWNERS_LIMIT}
    )`,
    // Locked once, read by both branches (a CTE read twice is computed once). Looked for only when an owner
    // expired or a job's own expiry passed (a condition on no row, so Postgres checks it once, before the scan):
    // planned on statistics gathered while jobs ran, the scan walks the primary key in id order, every row of
    // the table, to avoid a sort of the few it expects, on every claim that carries the recovery.
    sql`recover_expired as (
      select id, started_at is not null as started, attempt >= max_attempts as last from akadze.jobs
      where state = 'running' and lease_owner <> ${owner}
        and (lease_owner = any(array(select owner from recover_owners)) or lease_expires_at < ${now}
          or lease_expires_at is null and lease_owner = any(array(select owner from recover_orphans)))
        and (exists (select 1 from recover_owners) or exists (select 1 from recover_orphans) or ${firstOwnExpiry(now)} is not null)
      order by id limit ${RECOVER_LIMIT} for update skip locked
    )`,
    // Expired owner rows that lease nothing once this recovery is done, oldest first, a bounded number a claim.
    prunedOwnersCte("recover_owners_ended", { before: now, owner, batch: RECOVER_OWNERS_LIMIT, besides: sql`select id from recover_expired` }),
    sql`recover_requeued as (
      update akadze.jobs j set
        state = 'queued',
        attempt = case when x.started then j.attempt else j.attempt - 1 end,
        run_at = case when not x.started then j.run_at else ${now} + ${defaultBackoffSql(sql`j.attempt`)} end,
        started_at = case when x.started then j.started_at end,
        lease_owner = null, lease_expires_at = null,
        errors = case when not x.started then j.errors else j.errors || ${LEASE_EXPIRED(now)} end
      from recover_expired x
      where j.id = x.id and not (x.started and x.last)
      returning j.id, j.task, j.queue, j.attempt, j.state, case when x.started then ${LEASE_EXPIRED_NOTE} end as error
    )`,
    sql`recover_failed as (
      delete from akadze.jobs j using recover_expired x where j.id = x.id and x.started and x.last
      returning j.id, j.task, j.queue, j.args, 'failed'::text as state, j.priority, j.attempt, j.max_attempts, j.run_at, j.expires_at,
        j.unique_key, j.limit_key, j.limit_wait_ms, j.cancel_requested, j.errors || ${LEASE_EXPIRED(now)} as errors, j.result, j.created_at,
        j.started_at, ${now} as finished_at, j.fair_key, j.trace_context, ${LEASE_EXPIRED_NOTE} as error
    )`,
    ...archiveCtes("recover_failed", sql`select * from recover_failed`, "failed"),
    sql`${cte("recovered")} as (
      select id, task, queue, attempt, state, error from recover_requeued
      union all select id, task, queue, attempt, state, error from recover_failed
    )`,
    sql`recover_freed as (
      update akadze.limit_slots s set job_id = null from ${cte("recovered")} r where s.job_id = r.id
    )`,
  ];
}

/** Recovery as it rides on a claim: the CTEs above, and the jobs it moved reported as `recovered`. */
export function recoveryRide(now: SQL, owner: string): RideSql {
  return { before: recoverExpiredLeasesCtes(now, owner), report: { recovered: movedJobsJson(CTE.recovered, "running", sql`state`) } };
}

/**
 * Whether the CTEs above would find a job to recover at `now`, for a claim that leaves them out (the recovery
 * rider's probe): a running job leased by another owner whose row expired or is gone (the owners of running jobs
 * walked once each, and each one's row read: live engines, however many rows of ended ones wait to be deleted;
 * a job of a version before the owners table has no row but an expiry of its own, and is left to it), or one
 * leased with an expiry of its own that passed. Reported as `recoverable`; it costs a claim a fraction of
 * the CTEs' planning, which a claim pays on every new connection and, over neon-http, on every request.
 */
export function recoveryProbe(now: SQL, owner: string): RideSql {
  return {
    report: {
      recoverable: sql`(exists (
      ${LEASING_OWNERS}
      select 1 from leasing l where l.owner is not null and l.owner <> ${owner}
        and not exists (select 1 from akadze.owners o where o.owner = l.owner and o.expires_at >= ${now})
        and exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = l.owner and j.lease_expires_at is null))
      or ${firstOwnExpiry(now)} is not null)`,
    },
  };
}
