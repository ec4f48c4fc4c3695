import { sql, type SQL } from "drizzle-orm";
import { CHANGED_JOB } from "./changed-job.js";

/**
 * failed -> queued, keeping attempt, errors and args, growing max_attempts so one more run is allowed. Returns the job,
 * `{ clash: key }` when an active job holds the same unique key (nothing changes), or null.
 */
export function requeueStatement(jobId: number): SQL {
  return sql`
    with target as (select id, unique_key from akadze.jobs where id = ${jobId} and state = 'failed'),
    -- An active job holding the same unique key: nothing changes, and the result names the key.
    clash as (
      select t.unique_key from target t
      where exists (select 1 from akadze.jobs a where a.unique_key = t.unique_key and a.state in ('queued', 'running'))
    ),
    requeued as (
      -- least(): due at once even when the caller's clock lags the database's
      update akadze.jobs set state = 'queued', run_at = least(now(), run_at), finished_at = null, cancel_requested = false,
        max_attempts = greatest(max_attempts, attempt + 1)
      where id = ${jobId} and state = 'failed' and not exists (select 1 from clash)
      returning *
    )
    select coalesce((select ${CHANGED_JOB} from requeued), (select jsonb_build_object('clash', unique_key) from clash)) as r`;
}
