import { sql, type SQL } from "drizzle-orm";

/** The state, result and last error of each of a workflow's child jobs, by id; a job no longer stored is absent. */
export function readChildJobsStatement(ids: number[]): SQL {
  return sql`
    select coalesce(jsonb_agg(jsonb_build_object('id', id, 'state', state, 'result', result,
      'error', case when jsonb_array_length(errors) > 0 then jsonb_build_object('kind', errors->-1->>'kind', 'message', errors->-1->>'message') end)
      order by id), '[]'::jsonb) as r
    from akadze.all_jobs where id in (select value::bigint from jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))`;
}
