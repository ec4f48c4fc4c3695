// Jobs that wait for something that is not there: a task no running app defines (a typo, or producer and
// consumer on different versions), or a limitKey no `setLimit` ever configured (it runs unlimited).
// One statement; the worker and `akadze dev` warn with it, the CLI lists it, the metrics count it.
import { sql } from "drizzle-orm";
import { queryJson, type Db } from "../db/driver.js";

/** Queued jobs of one task the app does not define. */
export interface UnknownTaskRow { task: string; queue: string; jobs: number }
/** Queued or running jobs whose limitKey has no limit. */
export interface UnlimitedKeyRow { key: string; jobs: number }
/** What `findMisfits` found. */
export interface Misfits { unknownTasks: UnknownTaskRow[]; unlimitedKeys: UnlimitedKeyRow[] }

/**
 * Queued jobs whose task is not in `knownTasks`, and active jobs whose limitKey has no limit, in one statement.
 * @example const { unknownTasks } = await findMisfits(db, [...app.tasks.keys()]);
 */
export async function findMisfits(db: Db, knownTasks: string[]): Promise<Misfits> {
  const known = `{${knownTasks.map((t) => JSON.stringify(t)).join(",")}}`;
  return queryJson<Misfits>(db, sql`select jsonb_build_object(
    'unknownTasks', coalesce((select jsonb_agg(jsonb_build_object('task', task, 'queue', queue, 'jobs', n) order by n desc, task, queue)
      from (select task, queue, count(*)::int as n from akadze.jobs
            where state = 'queued' and not (task = any(${known}::text[])) group by task, queue) t), '[]'::jsonb),
    'unlimitedKeys', coalesce((select jsonb_agg(jsonb_build_object('key', key, 'jobs', n) order by n desc, key)
      from (select j.limit_key as key, count(*)::int as n from akadze.jobs j
            where j.state in ('queued', 'running') and j.limit_key is not null
              and not exists (select 1 from akadze.limits l where l.key = j.limit_key)
            group by j.limit_key) t), '[]'::jsonb)) as r`);
}

/**
 * The warnings for what `findMisfits` found: one line per unknown task and per unlimited key.
 * @example for (const line of misfitWarnings(await findMisfits(db, [...app.tasks.keys()]))) console.warn(line);
 */
export function misfitWarnings(misfits: Misfits): string[] {
  return [
    ...misfits.unknownTasks.map((r) => `${r.jobs} queued job${r.jobs === 1 ? "" : "s"} of task ${JSON.stringify(r.task)} (queue ${r.queue}) wait for an app that defines it: this app does not (a typo, or another version?)`),
    ...misfits.unlimitedKeys.map((r) => `${r.jobs} job${r.jobs === 1 ? "" : "s"} use limitKey ${JSON.stringify(r.key)}, which has no limit: they run unlimited until setLimit(db, ${JSON.stringify(r.key)}, ...)`),
  ];
}
