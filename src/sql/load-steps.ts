import { sql, type SQL } from "drizzle-orm";

/** A workflow's stored steps, in the order the handler first reached them, as one jsonb array. */
export function loadStepsStatement(jobId: number): SQL {
  return sql`
    select coalesce(jsonb_agg(jsonb_build_object('name', name, 'seq', seq, 'kind', kind, 'state', state, 'result', result,
      'hasResult', result is not null, 'errors', errors, 'attempts', attempts, 'wakeAt', wake_at, 'event', event, 'match', match,
      'createdAt', created_at, 'finishedAt', finished_at) order by seq), '[]'::jsonb) as r
    from akadze.steps where job_id = ${jobId}`;
}
