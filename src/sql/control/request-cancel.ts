import { sql, type SQL } from "drizzle-orm";
import { CHANGED_JOB, movedJobsJson } from "./changed-job.js";
import { cancelRowsCtes, childJobsCte } from "./cancel-jobs.js";

/**
 * Cancels a queued job at once (it moves to the history), or marks a running one so its heartbeat aborts
 * it; a workflow's live child jobs are cancelled with it (theirs too, and so on). Returns `{ job, moved }`:
 * the job it marked (`state` cancelled: it was queued; running: only marked) or null, and the children it
 * moved from queued to cancelled.
 */
export function requestCancelStatement(jobId: number): SQL {
  return sql`
    -- Locked first, so the two branches below decide on the same, latest version of the row (a claim that
    -- just took the job makes it a running one to mark, not a queued one to move).
    with recursive target as (select id, state from akadze.jobs where id = ${jobId} for update),
    ${sql.join(cancelRowsCtes("target", "target", sql`now()`), sql`, `)},
    ${childJobsCte("children", sql`select id from target`)},
    -- A child another statement holds right now (a claim, a settle) is skipped rather than waited for.
    kin as (
      select j.id, j.state from akadze.jobs j
      where j.id in (select id from children) and not (j.state = 'running' and j.cancel_requested)
      for update skip locked
    ),
    ${sql.join(cancelRowsCtes("kin", "kin", sql`now()`), sql`, `)}
    select jsonb_build_object('job', coalesce((select ${CHANGED_JOB} from target_moved), (select ${CHANGED_JOB} from target_marked)),
      'moved', ${movedJobsJson("kin_moved", "queued", sql`'cancelled'`)}) as r`;
}
