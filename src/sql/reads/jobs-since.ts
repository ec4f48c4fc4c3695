import { sql, type SQL } from "drizzle-orm";

/** The highest job id so far (0 for none), answered as `{ id }`: a mark to count the jobs enqueued after it. */
export function highestJobIdStatement(): SQL {
  return sql`
    select jsonb_build_object('id', greatest(
      (select max(id) from akadze.jobs), (select max(id) from akadze.job_history), (select max(id) from akadze.failed_jobs), 0)) as r`;
}

/**
 * Per task, the jobs enqueued after the mark and the jobs queued now (`due`: of those, the ones due at
 * `now`), busiest first: what a test helper names when its runs never end. One jsonb array.
 */
export function jobsSinceStatement(mark: number, now: SQL): SQL {
  return sql`
    select coalesce(jsonb_agg(jsonb_build_object('task', task, 'enqueued', enqueued, 'queued', queued, 'due', due)
      order by enqueued desc, queued desc, task), '[]'::jsonb) as r
    from (
      select task, count(*) filter (where id > ${mark})::int as enqueued, count(*) filter (where state = 'queued')::int as queued,
        count(*) filter (where state = 'queued' and run_at <= ${now})::int as due
      from akadze.all_jobs where id > ${mark} or state = 'queued'
      group by task
    ) t`;
}
