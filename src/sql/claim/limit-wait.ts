import { sql, type SQL } from "drizzle-orm";
import { archiveCtes } from "../history/archive.js";
import { tokenFree } from "./start.js";
import { movedJobsJson } from "../control/changed-job.js";

/** How many held-back jobs one claim ends at most; the rest end at the next claim. */
export const RATE_LIMIT_END_LIMIT = 500;

/**
 * True for a queued job (alias `j`) that opted in with `limit_wait_ms`, has been due for longer than
 * that, and whose limit key has no room right now (the CTE `limit_full`, which `rateLimitedCtes` adds).
 */
export function heldPastLimitWait(now: SQL): SQL {
  return sql`(j.limit_wait_ms is not null
    and j.run_at < ${now} - j.limit_wait_ms::float8 * interval '1 millisecond'
    and j.limit_key in (select key from limit_full))`;
}

/**
 * The claim's guard: a job it may take is not one `rate_limited` ended. "No room" reads the same tables,
 * in the same snapshot, as the claim's per-key room, so the claim never offers such a job; this makes the
 * two sets disjoint on their face, so one statement never touches a row twice. It sits on the claim's few
 * candidates, not on its scan of the backlog, where the planner would price it per queued job.
 */
export function notRateLimited(jobId: SQL): SQL {
  return sql`${jobId} not in (select id from rate_limited)`;
}

/**
 * Two CTEs. `limit_full`: the limit keys with no room now (every `maxRunning` slot taken, or no
 * `maxStarts` token out of its window), read once per statement. `rate_limited`: ends as `rate_limited` (moved to the history)
 * the jobs the claim would consider (`eligible`) that are held back past their bound. A job being
 * cancelled or past `expiresAt` (`stop`) is left to the claim, which cancels it. Locked rows are skipped,
 * so concurrent claims never wait on each other here; jobs_limit_wait_idx keeps the search to the jobs
 * that opted in, so a large backlog costs nothing here.
 */
export function rateLimitedCtes(p: { eligible: SQL; stop: SQL; now: SQL }): SQL {
  return sql`limit_full as (
      select l.key from akadze.limits l
      where (l.max_running is not null
          and (select count(*) from akadze.limit_slots s where s.key = l.key and s.job_id is not null) >= l.max_running)
        or (l.max_starts is not null and not exists (select 1 from akadze.limit_tokens t where t.key = l.key
          and ${tokenFree(p.now)}))
    ),
    rate_limited as (
      delete from akadze.jobs j
      using (select j.id from akadze.jobs j
            where ${p.eligible} and not ${p.stop} and ${heldPastLimitWait(p.now)}
            order by j.run_at limit ${RATE_LIMIT_END_LIMIT} for update of j skip locked) x
      where j.id = x.id
      returning j.id, j.task, j.queue, j.args, 'rate_limited'::text as state, j.priority, j.attempt, j.max_attempts, j.run_at, j.expires_at,
        j.unique_key, j.limit_key, j.limit_wait_ms, j.cancel_requested, j.errors, j.result, j.created_at, j.started_at, ${p.now} as finished_at, j.fair_key, j.trace_context
    ),
    ${sql.join(archiveCtes("rate_limited", sql`select * from rate_limited`, "history"), sql`, `)}`;
}

/** The jobs `rateLimitedCtes` ended, as side transitions for the claim's result. */
export function rateLimitedTransitions(): SQL {
  return movedJobsJson("rate_limited", "queued", sql`'rate_limited'`);
}
