import { sql, type SQL } from "drizzle-orm";
import { msInterval, mustStop } from "./time.js";

/**
 * A CTE `name(ids)` that locks the jobs among `ids` (a jsonb array) leased to `owner`, in id order, before
 * anything else in the statement touches them: the heartbeat and the settle lock the same rows from two
 * connections at once, and rows locked in different orders deadlock. Statements read `ids` as
 * `j.id = any((select ids from name)::bigint[])`, an init plan evaluated (so every lock taken) before their scan
 * returns its first row.
 */
export function lockOwnedInIdOrder(name: string, owner: string, ids: SQL): SQL {
  return sql`${sql.raw(name)} as (select array(
      select l.id from akadze.jobs l
      where l.id in (select value::bigint from jsonb_array_elements_text(${ids})) and l.state = 'running' and l.lease_owner = ${owner}
      order by l.id for update) as ids)`;
}

/** A job still leased to the invocation, with what its body should know. */
export interface HeldJob { id: number; stop: boolean }

/**
 * Extends the leases of the jobs `owner` holds among `ids` in one statement and reports cancel requests and
 * expiries. Only the jobs the invocation still holds are named: a job it forgot is left to lease expiry.
 */
export function heartbeatStatement(owner: string, now: SQL, leaseMs: number, ids: number[]): SQL {
  return sql`
    with ${lockOwnedInIdOrder("hb_locked", owner, sql`${JSON.stringify(ids)}::jsonb`)},
    held as (
      update akadze.jobs j set lease_expires_at = ${now} + ${msInterval(sql`${leaseMs}`)}
      where j.id = any((select ids from hb_locked)::bigint[]) and j.state = 'running' and j.lease_owner = ${owner}
      returning j.id, ${mustStop(now)} as stop
    )
    select coalesce(json_agg(json_build_object('id', id, 'stop', stop)), '[]'::json) as r from held`;
}
