import { sql, type SQL } from "drizzle-orm";
import { findMisfitsStatement, type Misfits } from "./find-misfits.js";
import { TRANSITION_HOOK_FAILED } from "../../core/errors.js";
import { limitUsage } from "../limits/limit-usage.js";
import { queueCounts } from "./queue-counts.js";
import { historyCounts } from "../history/history-counts.js";
import { workerStatus } from "../registry/worker-status.js";

/** What `readMetricsStatement` returns: one array of tuples per family group. */
export interface MetricsSnapshot {
  /** [queue, task, state, jobs]: succeeded, cancelled and rate_limited estimated once the history is large (history-counts.ts) */
  jobs: [string, string, string, number][];
  /** [queue, paused, oldest due seconds, running (started), expired leases, claimed (not started)] */
  queues: [string, boolean, number, number, number, number][];
  /** [queue, task, failed attempts, transition hook failures] recorded since the window's start */
  errors: [string, string, number, number][];
  /** [queue, task, state, jobs] finished since the window's start */
  finished: [string, string, string, number][];
  /** [key, maxRunning, running, maxStarts, starts in window] */
  limits: [string, number | null, number, number | null, number][];
  /** [kind, live] */
  workers: [string, number][];
  /** With `knownTasks`: what `findMisfitsStatement` finds, `{ unknownTasks, unlimitedKeys }`. */
  misfits?: Misfits;
}

const rows = (query: SQL) => sql`coalesce((select jsonb_agg(x.v order by x.v) from (${query}) x), '[]'::jsonb)`;

/** Everything the metrics show, at `now` and over the window since `since`, in one statement (a `MetricsSnapshot`). */
export function readMetricsStatement(now: SQL, since: SQL, knownTasks?: string[]): SQL {
  // The history is counted (from a sample once it is large: history-counts.ts) once, for both families that show it.
  return sql`with history as (${historyCounts(["queue", "task", "state"])})
    select jsonb_build_object(
    'jobs', ${rows(sql`select jsonb_build_array(queue, task, state, n) as v from (
      select queue, task, state, count(*) as n from akadze.jobs group by queue, task, state
      union all select queue, task, 'failed', count(*) from akadze.failed_jobs group by queue, task
      union all select queue, task, state, n from history) c`)},
    'queues', ${rows(sql`
      select jsonb_build_array(c.queue, c.paused, c.oldest_due_seconds, c.running, c.expired, c.claimed) as v
      from (${queueCounts(now, sql`select queue, state, sum(n) as n from history group by queue, state`)}) c`)},
    'errors', ${rows(sql`
      -- A hook failure is recorded in the errors but is no failed attempt: the change it saw stood.
      select jsonb_build_array(j.queue, j.task, count(*) filter (where e->>'kind' <> ${TRANSITION_HOOK_FAILED}),
        count(*) filter (where e->>'kind' = ${TRANSITION_HOOK_FAILED})) as v
      from akadze.all_jobs j cross join lateral jsonb_array_elements(j.errors) e
      -- (An error recorded in the window belongs to a job that is live or finished in it: the finished rows
      -- read are the window's partitions, not the whole history.)
      where j.errors <> '[]'::jsonb and (j.finished_at is null or j.finished_at > ${since}) and (e->>'at')::timestamptz > ${since}
      group by j.queue, j.task`)},
    'finished', ${rows(sql`
      select jsonb_build_array(queue, task, state, count(*)) as v from (
        select queue, task, state from akadze.job_history where finished_at > ${since}
        union all select queue, task, state from akadze.failed_jobs where finished_at > ${since}) f
      group by queue, task, state`)},
    'limits', ${rows(sql`
      select jsonb_build_array(u.key, u.max_running, u.running, u.max_starts, u.starts_in_window) as v from (${limitUsage(now)}) u`)},
    'workers', ${rows(sql`
      select jsonb_build_array(k.kind, (select count(*) from (${workerStatus(now, sql`w.kind = k.kind and w.stopped_at is null`)}) s
        where s.status = 'live')) as v
      from (values ('invocation'), ('worker')) k(kind)`)}${knownTasks ? sql`,
    'misfits', (${findMisfitsStatement(knownTasks)})` : sql``}
  ) as r`;
}
