import { sql, type SQL } from "drizzle-orm";
import { parseDuration } from "../../core/duration.js";
import { msInterval } from "../time.js";
import { leaseExpirySql } from "../claim/owner-lease.js";

/**
 * Job `j` is leased to an engine of the invocation or worker whose id is `id` (lease owners are `id#token`,
 * leaseOwnerFor; a bare id is an owner written before them).
 */
export function ownedBy(id: SQL): SQL {
  return sql`(j.lease_owner = ${id} or starts_with(j.lease_owner, ${id} || '#'))`;
}

/** A worker not seen for this long without saying it stopped is reported `lost`. */
export const LIVE_WITHIN = "1m";

/**
 * Registry rows matching `where` (on `w`, the akadze.workers row) with, at `now`, the jobs they hold a live
 * lease on (`held`) and their `status`: a worker is live while it keeps being seen; an invocation while it
 * holds leases, `lost` once they expired; either is `stopped` once it said so. `listWorkersStatement` and
 * the metrics read the same status.
 */
export function workerStatus(now: SQL, where: SQL): SQL {
  return sql`
    select w.*, case
      when w.stopped_at is not null then 'stopped'
      -- An invocation fan-out started is live from the moment its slot is taken, before it holds any lease.
      when w.kind = 'invocation' and exists (select 1 from akadze.invocation_slots s where s.holder = w.id and s.expires_at >= ${now}) then 'live'
      when w.kind = 'worker' then case when w.last_seen_at >= ${now} - ${msInterval(sql`${parseDuration(LIVE_WITHIN)}`)} then 'live' else 'lost' end
      when w.held > 0 then 'live'
      when w.expired > 0 then 'lost'
      else 'stopped' end as status
    from (
      select w.*,
        (select count(*) from akadze.jobs j where j.state = 'running' and ${ownedBy(sql`w.id`)} and ${leaseExpirySql("j")} >= ${now}) as held,
        (select count(*) from akadze.jobs j where j.state = 'running' and ${ownedBy(sql`w.id`)} and ${leaseExpirySql("j")} < ${now}) as expired
      from akadze.workers w
      where ${where}
    ) w`;
}
