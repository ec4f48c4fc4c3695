import { sql, type SQL } from "drizzle-orm";
import { msInterval, mustStop } from "./time.js";

/** A job still leased to the invocation, with what its body should know. */
export interface HeldJob { id: number; stop: boolean }

/**
 * Extends the leases of the jobs `owner` holds among `ids` in one statement and reports cancel requests and
 * expiries. Only the jobs the invocation still holds are named: a job it forgot is left to lease expiry.
 */
export function heartbeatStatement(owner: string, now: SQL, leaseMs: number, ids: number[]): SQL {
  return sql`
    with held as (
      update akadze.jobs j set lease_expires_at = ${now} + ${msInterval(sql`${leaseMs}`)}
      where j.id in (select value::bigint from jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))
        and j.state = 'running' and j.lease_owner = ${owner}
      returning j.id, ${mustStop(now)} as stop
    )
    select coalesce(json_agg(json_build_object('id', id, 'stop', stop)), '[]'::json) as r from held`;
}
