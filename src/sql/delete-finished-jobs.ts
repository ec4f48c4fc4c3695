import { sql, type SQL } from "drizzle-orm";
import { FINISHED_STATES, type FinishedState } from "../core/states.js";

/** A finished state as an SQL literal, so the planner sees constants and uses the (state, finished_at) index. */
function stateLiteral(state: FinishedState): string {
  if (!FINISHED_STATES.includes(state)) throw new TypeError(`not a finished state: ${state}`);
  return `'${state}'`;
}

/**
 * A CTE `name` that deletes up to `limit` jobs in `states` that finished before `cutoff`, returning their
 * ids. The (state, finished_at) index makes this a short range scan; SKIP LOCKED lets concurrent
 * invocations share the work instead of waiting. The steps of deleted workflow jobs go with them (a
 * second CTE, `<name>_steps`): steps have no foreign key to their job, so nothing else removes them.
 */
export function deleteFinishedJobsCte(name: string, states: readonly FinishedState[], cutoff: SQL, limit: number): SQL {
  return sql`${sql.identifier(name)} as (
    delete from akadze.jobs where id in (
      select id from akadze.jobs
      where state in (${sql.raw(states.map(stateLiteral).join(", "))}) and finished_at < ${cutoff}
      limit ${limit} for update skip locked)
    returning id),
    ${sql.identifier(`${name}_steps`)} as (delete from akadze.steps where job_id in (select id from ${sql.identifier(name)}))`;
}
