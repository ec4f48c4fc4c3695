import { sql, type SQL } from "drizzle-orm";
import { JOB_SUMMARY_FIELDS } from "../claim/job-fields.js";
import { leaseExpirySql } from "../claim/owner-lease.js";

/** One job with everything stored about it (its progress and log lines too), as one jsonb object; null for an unknown id. */
export function getJobStatement(jobId: number): SQL {
  return sql`
    select jsonb_build_object(${JOB_SUMMARY_FIELDS}, 'args', args, 'result', result, 'errors', errors, 'expiresAt', expires_at,
      'startedAt', started_at, 'uniqueKey', unique_key, 'limitKey', limit_key, 'limitWaitMs', limit_wait_ms, 'fairKey', fair_key, 'leaseOwner', lease_owner,
      'leaseExpiresAt', ${leaseExpirySql("a")}, 'cancelRequested', cancel_requested, 'traceContext', trace_context,
      'replayOf', (select replay_of from akadze.replays where job_id = ${jobId}),
      'reported', (select jsonb_build_object('progress', progress, 'progressAt', progress_at, 'logsDropped', logs_dropped)
        from akadze.job_progress where job_id = ${jobId}),
      'logs', (select jsonb_agg(jsonb_build_object('attempt', attempt, 'at', logged_at, 'message', message) order by seq)
        from akadze.job_logs where job_id = ${jobId})) as r
    from akadze.all_jobs a where id = ${jobId}`;
}
