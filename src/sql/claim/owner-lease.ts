import { sql, type SQL } from "drizzle-orm";
import { msInterval } from "../time.js";

/**
 * A CTE that (re)leases `owner` until `now + leaseMs`: its row in `akadze.owners`, which every job it runs
 * shares (a running job's own `lease_expires_at` stays null). Every claim and every heartbeat carries it, so
 * the jobs a statement leases are never without a live owner row. A HOT update of one row: the expiry is not
 * indexed.
 */
export function ownerLeaseCte(owner: string, now: SQL, leaseMs: number): SQL {
  return sql`owner_leased as (
      insert into akadze.owners as o (owner, expires_at) values (${owner}, ${now} + ${msInterval(sql`${leaseMs}`)})
      on conflict (owner) do update set expires_at = excluded.expires_at
    )`;
}

/**
 * When the lease of the running job `j` (an alias of akadze.jobs or all_jobs) expires: its owner's row, or its
 * own expiry if a version before the owners table leased it. Null for a job no engine holds.
 */
export function leaseExpirySql(j: string): SQL {
  const a = sql.raw(j);
  return sql`coalesce(${a}.lease_expires_at, (select o.expires_at from akadze.owners o where o.owner = ${a}.lease_owner))`;
}
