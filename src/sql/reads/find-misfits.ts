import { sql, type SQL } from "drizzle-orm";

/** Queued jobs of one task the app does not define. */
export interface UnknownTaskRow { task: string; queue: string; jobs: number }
/** Queued or running jobs whose limitKey has no limit. */
export interface UnlimitedKeyRow { key: string; jobs: number }
/** What `findMisfits` found. */
export interface Misfits { unknownTasks: UnknownTaskRow[]; unlimitedKeys: UnlimitedKeyRow[] }

/**
 * Queued jobs whose task is not in `knownTasks` (per task and queue), and queued or running jobs whose
 * limitKey has no limit (per key), most jobs first, as one jsonb object `{ unknownTasks, unlimitedKeys }`.
 */
export function findMisfitsStatement(knownTasks: string[]): SQL {
  // Sent as JSON, not as an array literal: JSON's escapes ("\n") are not an array literal's.
  const known = sql`array(select jsonb_array_elements_text(${JSON.stringify(knownTasks)}::jsonb))`;
  return sql`select jsonb_build_object(
    'unknownTasks', coalesce((select jsonb_agg(jsonb_build_object('task', task, 'queue', queue, 'jobs', n) order by n desc, task, queue)
      from (select task, queue, count(*)::int as n from akadze.jobs
            where state = 'queued' and not (task = any(${known})) group by task, queue) t), '[]'::jsonb),
    'unlimitedKeys', coalesce((select jsonb_agg(jsonb_build_object('key', key, 'jobs', n) order by n desc, key)
      from (select j.limit_key as key, count(*)::int as n from akadze.jobs j
            where j.state in ('queued', 'running') and j.limit_key is not null
              and not exists (select 1 from akadze.limits l where l.key = j.limit_key)
            group by j.limit_key) t), '[]'::jsonb)) as r`;
}
