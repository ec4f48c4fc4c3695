import { sql, type SQL } from "drizzle-orm";
import { CHANGED_JOB } from "./changed-job.js";

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
    select (select ${CHANGED_JOB} from marked) as r`;
}
