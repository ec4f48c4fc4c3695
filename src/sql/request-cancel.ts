import { sql, type SQL } from "drizzle-orm";
import { archiveCtes } from "./archive.js";
import { CHANGED_JOB } from "./changed-job.js";

/**
 * Cancels a queued job at once (it moves to the history), or marks a running one so its heartbeat aborts
 * it. Returns the job it marked (`state` cancelled: it was queued; running: only marked), or null.
 */
export function requestCancelStatement(jobId: number): SQL {
  return sql`
    -- Locked first, so the two branches below decide on the same, latest version of the row (a claim that
    -- just took the job makes it a running one to mark, not a queued one to move).
    with target as (select id, state from akadze.jobs where id = ${jobId} for update),
    moved as (
      delete from akadze.jobs j using target t where j.id = t.id and t.state = 'queued'
      returning j.id, j.task, j.queue, j.args, 'cancelled'::text as state, j.priority, j.attempt, j.max_attempts, j.run_at, j.expires_at,
        j.unique_key, j.limit_key, j.limit_wait_ms, true as cancel_requested, j.errors, j.result, j.created_at, j.started_at, now() as finished_at, j.fair_key
    ),
    ${sql.join(archiveCtes("moved", sql`select * from moved`, "history"), sql`, `)},
    marked as (
      update akadze.jobs j set cancel_requested = true from target t where j.id = t.id and t.state = 'running'
      returning j.*
    )
    select coalesce((select ${CHANGED_JOB} from moved), (select ${CHANGED_JOB} from marked)) as r`;
}
