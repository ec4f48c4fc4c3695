import { sql, type SQL } from "drizzle-orm";

/**
 * What a watcher of one job needs at each look, as one jsonb object (null for an unknown id): its state and
 * attempt, its latest progress, and once it has ended its result and last error. One small statement, so a
 * page's event stream can poll it over neon-http.
 */
export function readJobProgressStatement(jobId: number): SQL {
  return sql`
    select jsonb_build_object('state', a.state, 'attempt', a.attempt, 'result', a.result, 'error', a.errors->-1,
      'progress', p.progress, 'progressAt', p.progress_at) as r
    from akadze.all_jobs a left join akadze.job_progress p on p.job_id = a.id
    where a.id = ${jobId}`;
}
