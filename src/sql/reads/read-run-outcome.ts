import { sql, type SQL } from "drizzle-orm";

/** What a run of the queue came to: every failed job with its last error, and how many succeeded after a retry. */
export interface RunOutcome {
  failed: { id: number; task: string; attempt: number; message: string }[];
  retriedThenSucceeded: number;
}

/** The `RunOutcome` of every job (the demo's closing lines). */
export function readRunOutcomeStatement(): SQL {
  return sql`select jsonb_build_object(
    'failed', coalesce((select jsonb_agg(jsonb_build_object('id', id, 'task', task, 'attempt', attempt, 'message', errors->-1->>'message') order by id)
      from akadze.failed_jobs), '[]'::jsonb),
    'retriedThenSucceeded', (select count(*) from akadze.job_history where jsonb_array_length(errors) > 0 and state = 'succeeded')) as r`;
}
