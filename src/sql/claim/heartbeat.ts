import { sql, type SQL } from "drizzle-orm";
import { mustCancel } from "../time.js";
import { ownerLeaseCte } from "./owner-lease.js";

/** A job still leased to the engine, with what its body should know: `cancel`, its cancel was requested or it expired. */
export interface HeldJob { id: number; cancel: boolean }

/** What a heartbeat answers: the named jobs still leased to the engine, and how many others are leased to it. */
export interface BeatAnswer { held: HeldJob[]; unnamed: number }

/**
 * Renews the lease of `owner` (its one row in `akadze.owners`, which every job it runs shares) and reports, of
 * the jobs it names (`ids`, those it knows), which are still leased to it and which to cancel (cancel
 * requested, expired); and how many jobs leased to it it did not name. The jobs' rows are only read: the
 * heartbeat writes one row however many jobs the engine holds. Unnamed jobs are either claimed while the beat
 * was on its way or forgotten (a claim whose answer was lost): the engine then puts back those it does not
 * know before its next claim (release-unheld.ts), as it does after a lost answer.
 */
export function heartbeatStatement(owner: string, now: SQL, leaseMs: number, ids: number[]): SQL {
  const named = sql`${JSON.stringify(ids)}::jsonb`;
  return sql`
    with ${ownerLeaseCte(owner, now, leaseMs)},
    hb_named as (select value::bigint as id from jsonb_array_elements_text(${named})),
    held as (
      select j.id, ${mustCancel(now)} as cancel from akadze.jobs j
      where j.id in (select id from hb_named) and j.state = 'running' and j.lease_owner = ${owner}
    )
    select json_build_object(
      'held', coalesce((select json_agg(json_build_object('id', id, 'cancel', cancel)) from held), '[]'::json),
      'unnamed', (select count(*) from akadze.jobs j where j.state = 'running' and j.lease_owner = ${owner}
        and j.lease_expires_at is null and j.id not in (select id from hb_named))
    ) as r`;
}
