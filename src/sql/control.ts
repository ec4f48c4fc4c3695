import { sql, type SQL } from "drizzle-orm";

/** What a control statement changed: the job, and its state after the change. */
export interface ControlledJob { id: number; task: string; queue: string; state: string; attempt: number }

const CHANGED = sql`jsonb_build_object('id', id, 'task', task, 'queue', queue, 'state', state, 'attempt', attempt)`;

/**
 * Cancels a queued job at once, or marks a running one so its heartbeat aborts it. Returns the job it
 * marked (`state` cancelled: it was queued; running: only marked), or null.
 */
export function requestCancelStatement(jobId: number): SQL {
  return sql`
    with marked as (
      update akadze.jobs set cancel_requested = true,
        state = case when state = 'queued' then 'cancelled' else state end,
        finished_at = case when state = 'queued' then now() else finished_at end
      where id = ${jobId} and state in ('queued', 'running')
      returning *
    )
    select (select ${CHANGED} from marked) as r`;
}

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
    select coalesce((select ${CHANGED} from requeued), (select jsonb_build_object('clash', unique_key) from clash)) as r`;
}

/** Pauses or resumes a queue for every invocation. */
export function setQueuePausedStatement(queue: string, paused: boolean): SQL {
  return sql`
    insert into akadze.queues (name, paused, updated_at) values (${queue}, ${paused}, now())
    on conflict (name) do update set paused = excluded.paused, updated_at = excluded.updated_at
    returning to_jsonb(paused) as r`;
}
