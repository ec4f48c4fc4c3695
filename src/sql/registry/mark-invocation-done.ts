import { sql, type SQL } from "drizzle-orm";
import { timestamp } from "../time.js";
import { cte } from "../claim/cte-names.js";

/**
 * The invocation's registry row: `counted` more jobs done, seen at `now`, and stopped once its engine
 * (`owner`) holds no running job other than those `settled` (ids) moves out of the queue table.
 */
function markDone(id: string, owner: string, now: Date, counted: SQL, settled: SQL): SQL {
  return sql`update akadze.workers w set
      jobs_done = w.jobs_done + ${counted},
      last_seen_at = greatest(w.last_seen_at, ${timestamp(now)}),
      stopped_at = case when exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = ${owner}
                                      and j.id not in (${settled})) then w.stopped_at else ${timestamp(now)} end
    where w.id = ${id}`;
}

/**
 * A CTE for the completion's round trip (it reads the completion's `done` rows): counts the jobs this
 * invocation finished (releases aside) plus `alsoDone` completed on their own by completeTx, and marks it
 * stopped once it holds no other running job.
 */
export function invocationDoneCte(id: string, owner: string, now: Date, alsoDone: number): SQL {
  return sql`${cte("registrySeen")} as (
    ${markDone(id, owner, now, sql`${alsoDone}::int + (select count(*) from ${cte("done")} d where d.kind <> 'release')::int`, sql`select id from ${cte("done")}`)}
    returning w.id)`;
}

/**
 * The same update on its own, at the invocation's end, for `jobsDone` jobs that completed on their own
 * (completeTx, completeBatch) after its last completion statement: sent only when there are such jobs.
 */
export function invocationEndedStatement(id: string, owner: string, now: Date, jobsDone: number): SQL {
  return sql`${markDone(id, owner, now, sql`${jobsDone}::int`, sql`select null::bigint where false`)} returning to_jsonb(w.id) as r`;
}
