import { sql, type SQL } from "drizzle-orm";
import { archiveCtes } from "../history/archive.js";
import { movedJobsJson } from "./changed-job.js";
import { selectionWhere, type JobSelectionSql } from "../reads/job-selection.js";

/**
 * A recursive CTE `name (id)`: the child jobs the workflows `parents` (a query of ids) wait for, their own
 * children, and so on. `akadze.child_waits` holds a child until it ends, so these are the live ones (and a
 * few that ended outside a settle, which the caller's join with akadze.jobs leaves out). The statement must
 * begin `with recursive`.
 */
export function childJobsCte(name: string, parents: SQL): SQL {
  const self = sql.identifier(name);
  return sql`${self}(id) as (
      select w.child_id from akadze.child_waits w where w.parent_id in (${parents})
      union
      select w.child_id from akadze.child_waits w join ${self} d on w.parent_id = d.id
    )`;
}

/**
 * CTEs that cancel the rows of `rows` (a CTE of `(id, state)` this statement has locked): queued ones move to
 * the history as cancelled (`<name>_moved`, with the job's columns), running ones are marked so their heartbeat
 * aborts them (`<name>_marked`); the child waits of the moved go with them (`<name>_waits`).
 */
export function cancelRowsCtes(name: string, rows: string, at: SQL): SQL[] {
  const moved = `${name}_moved`;
  return [
    sql`${sql.identifier(moved)} as (
      delete from akadze.jobs j using ${sql.identifier(rows)} t where j.id = t.id and t.state = 'queued'
      returning j.id, j.task, j.queue, j.args, 'cancelled'::text as state, j.priority, j.attempt, j.max_attempts, j.run_at, j.expires_at,
        j.unique_key, j.limit_key, j.limit_wait_ms, true as cancel_requested, j.errors, j.result, j.created_at, j.started_at, ${at} as finished_at, j.fair_key, j.trace_context
    )`,
    ...archiveCtes(moved, sql`select * from ${sql.identifier(moved)}`, "history"),
    sql`${sql.identifier(`${name}_marked`)} as (
      update akadze.jobs j set cancel_requested = true from ${sql.identifier(rows)} t where j.id = t.id and t.state = 'running'
      returning j.*
    )`,
    sql`${sql.identifier(`${name}_waits`)} as (delete from akadze.child_waits where child_id in (select id from ${sql.identifier(moved)}))`,
  ];
}

/**
 * Cancels the active jobs the selection takes (at most its limit, oldest first) and every live child job of
 * the workflows among them: queued ones at once, running ones marked (a running job already marked is not
 * taken again). Rows another statement holds right now (a claim taking them, a settle) are skipped rather
 * than waited for, so a bulk cancel never stalls the engine nor deadlocks with it. Returns `{ count, moved }`
 * (the queued jobs it cancelled, for transition hooks); `dryRun` counts the same jobs without locking or
 * changing any.
 */
export function cancelJobsStatement(s: JobSelectionSql, at: SQL, dryRun: boolean): SQL {
  const notMarked = sql`not (j.state = 'running' and j.cancel_requested)`;
  const lock = dryRun ? sql`` : sql`for update skip locked`;
  const ctes = [
    sql`picked as (select j.id from akadze.jobs j where ${selectionWhere(s, "j")} and ${notMarked} order by j.id limit ${s.limit} ${lock})`,
    childJobsCte("children", sql`select id from picked`),
    sql`target as (
      select j.id, j.state from akadze.jobs j
      where (j.id in (select id from picked) or j.id in (select id from children)) and ${notMarked}
      ${lock}
    )`,
  ];
  if (dryRun) return sql`with recursive ${sql.join(ctes, sql`, `)} select jsonb_build_object('count', (select count(*) from target), 'moved', '[]'::jsonb) as r`;
  return sql`with recursive ${sql.join([...ctes, ...cancelRowsCtes("target", "target", at)], sql`, `)}
    select jsonb_build_object('count', (select count(*) from target_moved) + (select count(*) from target_marked),
      'moved', ${movedJobsJson("target_moved", "queued", sql`'cancelled'`)}) as r`;
}
