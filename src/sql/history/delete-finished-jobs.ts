import { sql, type SQL } from "drizzle-orm";
import { FINISHED_STATES, type FinishedState } from "../../core/states.js";

/** A finished state as an SQL literal, so the planner sees constants. */
function stateLiteral(state: FinishedState): string {
  if (!FINISHED_STATES.includes(state)) throw new TypeError(`not a finished state: ${state}`);
  return `'${state}'`;
}

/**
 * A CTE `name` (and helpers named after it) that deletes, one by one, up to `limit` jobs in `states` that
 * finished before `cutoff`, returning their ids: failed ones from the dead letters (by their finished_at
 * index), the others from the history (the partitions before `cutoff`, by their block-range index).
 * SKIP LOCKED lets concurrent invocations share the work instead of waiting. Retention drops the history's
 * partitions whole instead; this is for `pruneJobs` and the failed jobs' own horizon. The steps of deleted
 * workflow jobs go with them (`<name>_steps`): steps have no foreign key to their job, so nothing else removes them.
 */
export function deleteFinishedJobsCte(name: string, states: readonly FinishedState[], cutoff: SQL, limit: number): SQL {
  const literals = states.map(stateLiteral);
  const inHistory = literals.filter((s) => s !== "'failed'");
  const parts: SQL[] = [];
  const selects: SQL[] = [];
  if (states.includes("failed")) {
    parts.push(sql`${sql.identifier(`${name}_failed`)} as (
      delete from akadze.failed_jobs where id in (
        select id from akadze.failed_jobs where finished_at < ${cutoff} limit ${limit} for update skip locked)
      returning id)`);
    selects.push(sql`select id from ${sql.identifier(`${name}_failed`)}`);
  }
  if (inHistory.length > 0) {
    parts.push(sql`${sql.identifier(`${name}_history`)} as (
      delete from akadze.job_history where finished_at < ${cutoff} and id in (
        select id from akadze.job_history where state in (${sql.raw(inHistory.join(", "))}) and finished_at < ${cutoff}
        limit ${limit} for update skip locked)
      returning id)`);
    selects.push(sql`select id from ${sql.identifier(`${name}_history`)}`);
  }
  parts.push(sql`${sql.identifier(name)} as (${sql.join(selects, sql` union all `)})`);
  parts.push(sql`${sql.identifier(`${name}_steps`)} as (delete from akadze.steps where job_id in (select id from ${sql.identifier(name)}))`);
  return sql.join(parts, sql`, `);
}
