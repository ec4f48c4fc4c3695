import { sql, type SQL } from "drizzle-orm";
import { CHANGED_JOB } from "./changed-job.js";

/**
 * The redrive: moves a failed job from the dead letters back into `akadze.jobs` as queued, keeping its id,
 * attempt, errors and args, growing max_attempts so one more run is allowed. Returns the job, `{ clash: key }`
 * when an active job holds the same unique key (nothing changes), or null.
 */
export function requeueStatement(jobId: number): SQL {
  return sql`
    with target as (select id, unique_key from akadze.failed_jobs where id = ${jobId}),
    -- An active job holding the same unique key: nothing changes, and the result names the key.
    clash as (
      select t.unique_key from target t
      where exists (select 1 from akadze.jobs a where a.unique_key = t.unique_key and a.state in ('queued', 'running'))
    ),
    moved as (
      delete from akadze.failed_jobs where id = ${jobId} and not exists (select 1 from clash)
      returning *
    ),
    ${requeuedCte(sql`*`)}
    select coalesce((select ${CHANGED_JOB} from requeued), (select jsonb_build_object('clash', unique_key) from clash)) as r`;
}

/**
 * The CTE `requeued`: the failed jobs in `moved` (deleted from the dead letters) written back queued, due at
 * once, attempt and errors kept, with one more attempt allowed if they had none left; returning `returning`.
 */
export function requeuedCte(returning: SQL): SQL {
  return sql`requeued as (
      -- least(): due at once even when the caller's clock lags the database's
      insert into akadze.jobs (id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key,
        limit_wait_ms, cancel_requested, errors, result, created_at, started_at, fair_key, trace_context) overriding system value
      select id, task, queue, args, 'queued', priority, attempt, greatest(max_attempts, attempt + 1), least(now(), run_at), expires_at,
        unique_key, limit_key, limit_wait_ms, false, errors, result, created_at, started_at, fair_key, trace_context
      from moved
      returning ${returning}
    )`;
}
