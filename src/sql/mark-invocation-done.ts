import { sql, type SQL } from "drizzle-orm";
import { timestamp } from "./time.js";

/**
 * A CTE for the completion's round trip (it reads the completion's `done` rows): counts the jobs this
 * invocation finished (releases aside) plus `alsoDone` completed on their own by completeTx, and marks it
 * stopped once it holds no other running job.
 */
export function invocationDoneCte(id: string, now: Date, alsoDone: number): SQL {
  return sql`akadze_seen as (
    update akadze.workers w set
      jobs_done = w.jobs_done + ${alsoDone}::int + (select count(*) from done where done.kind <> 'release')::int,
      last_seen_at = greatest(w.last_seen_at, ${timestamp(now)}),
      stopped_at = case when exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = ${id}
                                      and j.id not in (select id from done)) then w.stopped_at else ${timestamp(now)} end
    where w.id = ${id}
    returning w.id)`;
}
