import { sql, type SQL } from "drizzle-orm";
import { msInterval } from "./claim.js";

/** A job still leased to the invocation, with what its body should know. */
export interface HeldJob { id: number; stop: boolean }

/** Extends every lease `owner` holds in one statement and reports cancel requests and expiries. */
export function heartbeatStatement(owner: string, now: Date, leaseMs: number): SQL {
  const at = sql`${now.toISOString()}::timestamptz`;
  return sql`
    with held as (
      update akadze.jobs set lease_expires_at = ${at} + ${msInterval(sql`${leaseMs}`)}
      where state = 'running' and lease_owner = ${owner}
      returning id, (cancel_requested or coalesce(expires_at <= ${at}, false)) as stop
    )
    select coalesce(jsonb_agg(jsonb_build_object('id', id, 'stop', stop)), '[]'::jsonb) as r from held`;
}
