import { sql, type SQL } from "drizzle-orm";
import { movedJobsJson } from "./changed-job.js";
import { JOBS_CHANNEL } from "../enqueue/enqueue.js";
import { selectionWhere, type JobSelectionSql } from "../reads/job-selection.js";
import { requeuedCte } from "./requeue.js";

/**
 * A CTE `name (id)`: the rows of `rows` (a CTE with `id`, `unique_key`) that can become active jobs now: no
 * active job holds their unique key, and of several sharing one key only the newest (one active job per key).
 */
export function freeOfKeyClashCte(name: string, rows: string): SQL {
  return sql`${sql.identifier(name)} as (
      select r.id from (select r.id, r.unique_key, row_number() over (partition by r.unique_key order by r.id desc) as n
                        from ${sql.identifier(rows)} r) r
      where r.unique_key is null
        or (r.n = 1 and not exists (select 1 from akadze.jobs a where a.unique_key = r.unique_key and a.state in ('queued', 'running')))
    )`;
}

/**
 * The bulk redrive: moves the failed jobs the selection takes (at most its limit, oldest first) from the dead
 * letters back to queued, like `requeueStatement` (id, attempt, errors and args kept, max_attempts grown so one
 * more run is allowed). A job whose unique key an active job holds stays failed, as does all but the newest of
 * several failed jobs sharing a key. Returns `{ count, moved }`; `dryRun` counts without locking or changing.
 */
export function requeueJobsStatement(s: JobSelectionSql, dryRun: boolean): SQL {
  const picked = sql`picked as (
      select f.id, f.unique_key from akadze.failed_jobs f where ${selectionWhere(s, "f")}
      order by f.id limit ${s.limit} ${dryRun ? sql`` : sql`for update skip locked`}
    ), ${freeOfKeyClashCte("eligible", "picked")}`;
  if (dryRun) return sql`with ${picked} select jsonb_build_object('count', (select count(*) from eligible), 'moved', '[]'::jsonb) as r`;
  return sql`
    with ${picked},
    moved as (delete from akadze.failed_jobs f using eligible e where f.id = e.id returning f.*),
    ${requeuedCte(sql`id, task, queue, attempt`)},
    -- Wakes listening workers when it commits, as an enqueue does.
    notified as (select pg_notify(${JOBS_CHANNEL}, q.queue) from (select distinct queue from requeued) q)
    select jsonb_build_object('count', (select count(*) from requeued), 'moved', ${movedJobsJson("requeued", "failed", sql`'queued'`)},
      'notified', (select count(*) from notified)) as r`;
}
