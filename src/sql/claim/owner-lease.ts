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

/**
 * CTE `name`: deletes the rows of owners whose lease expired before `before` and that lease no running job (an
 * engine that ended, or died holding nothing; `besides`: jobs this statement moves out of running, which do not
 * count), a bounded batch, oldest first. Recovery runs it after it requeues a dead engine's jobs; the retention
 * rider runs it too, since recovery rides only on a claim whose probe found work. A row deleted under a late
 * engine's claim leaves its jobs without an owner row, which recovery's probe finds.
 */
export function prunedOwnersCte(name: string, o: { before: SQL; owner: string; batch: number; besides?: SQL }): SQL {
  return sql`${sql.raw(name)} as (
      delete from akadze.owners o where o.owner in (
          select e.owner from akadze.owners e where e.expires_at < ${o.before} and e.owner <> ${o.owner}
          order by e.expires_at limit ${o.batch} for update skip locked)
        and not exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = o.owner${o.besides ? sql`
          and j.id not in (${o.besides})` : sql``})
    )`;
}
