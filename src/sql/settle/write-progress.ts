import { sql, type SQL } from "drizzle-orm";

/** The most log lines a job keeps, across its attempts; later lines are counted as dropped. */
export const MAX_LOG_LINES = 200;
/** The most bytes (UTF-8) of log lines a job keeps, across its attempts. */
export const MAX_LOG_BYTES = 65_536;

/** What one write of a run's reports carries: what changed since the run's last write. */
export interface ProgressWrite {
  jobId: number;
  /** The run's lease owner and attempt: a run that no longer holds the job writes nothing. */
  owner: string;
  attempt: number;
  /** The latest progress as JSON text, or null when it did not change. */
  progress: string | null;
  /** New log lines in order, each with the time it was written. */
  lines: readonly { message: string; at: string }[];
  /** Lines the run dropped itself (it knew the log was full) since its last write. */
  dropped: number;
}

/**
 * Stores a running job's latest progress and appends its new log lines, in one statement, only while `owner` holds
 * the job's run of `attempt` (a run that lost its lease, or a late write after the job ended, changes nothing).
 * Lines are kept in order while the job's log stays within MAX_LOG_LINES and MAX_LOG_BYTES, counted against the
 * tally in `job_progress` (so the cap spans the job's attempts); the rest are added to `logs_dropped`.
 */
export function writeProgressStatement(write: ProgressWrite, now: SQL): SQL {
  const { jobId } = write;
  return sql`
    with owned as (
      select id from akadze.jobs where id = ${jobId} and state = 'running' and lease_owner = ${write.owner} and attempt = ${write.attempt}
    ),
    tally as (
      select coalesce(max(log_lines), 0) as lines, coalesce(max(log_bytes), 0) as bytes from akadze.job_progress where job_id = ${jobId}
    ),
    offered as (
      select l.n, l.line->>'message' as message, (l.line->>'at')::timestamptz as logged_at,
        -- Running sums, so the lines kept are the first ones that fit and the order has no holes.
        sum(octet_length(l.line->>'message')) over (order by l.n) as bytes_upto
      from jsonb_array_elements(${JSON.stringify(write.lines)}::jsonb) with ordinality as l(line, n)
    ),
    kept as (
      insert into akadze.job_logs (job_id, seq, attempt, logged_at, message)
      select o.id, t.lines + f.n, ${write.attempt}::int, f.logged_at, f.message
      from offered f, tally t, owned o
      where t.lines + f.n <= ${MAX_LOG_LINES}::int and t.bytes + f.bytes_upto <= ${MAX_LOG_BYTES}::int
      on conflict do nothing
      returning octet_length(message) as bytes
    )
    insert into akadze.job_progress as p (job_id, progress, progress_at, log_lines, log_bytes, logs_dropped, updated_at)
    select o.id, ${write.progress}::jsonb, case when ${write.progress}::jsonb is null then null else ${now} end,
      (select count(*) from kept), (select coalesce(sum(bytes), 0) from kept),
      ${write.lines.length + write.dropped}::int - (select count(*) from kept)::int, ${now}
    from owned o
    on conflict (job_id) do update set
      progress = coalesce(excluded.progress, p.progress),
      progress_at = coalesce(excluded.progress_at, p.progress_at),
      log_lines = p.log_lines + excluded.log_lines,
      log_bytes = p.log_bytes + excluded.log_bytes,
      logs_dropped = p.logs_dropped + excluded.logs_dropped,
      updated_at = excluded.updated_at`;
}
