import { sql, type SQL } from "drizzle-orm";

/** Jobs per task and state, as one jsonb array of `{ task, state, n }` (what the demo draws). */
export function countJobsByTaskStatement(): SQL {
  return sql`
    select coalesce(jsonb_agg(jsonb_build_object('task', task, 'state', state, 'n', n) order by task), '[]'::jsonb) as r
    from (select task, state, count(*)::int as n from akadze.all_jobs group by task, state) t`;
}
