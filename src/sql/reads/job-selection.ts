import { sql, type SQL } from "drizzle-orm";
import { JOB_STATES } from "../../core/states.js";
import { ofTenant } from "../claim/fair.js";

/** Which jobs a bulk statement takes (validated by `parseSelection`): every field given must match. */
export interface JobSelectionSql {
  task?: string;
  queue?: string;
  fairKey?: string;
  /** The states to take, never empty. */
  states: readonly string[];
  /** Only jobs created before (at or before) this moment. */
  createdBefore?: SQL;
  /** Only jobs created after this moment. */
  createdAfter?: SQL;
  /** A JSON object the args must contain. */
  args?: Record<string, unknown>;
  limit: number;
}

/**
 * The selection as a condition on the row `alias` of a jobs-shaped table. States are literals (checked against
 * JOB_STATES) so the planner sees constants, as the partial indexes on `state` need.
 */
export function selectionWhere(s: JobSelectionSql, alias: string): SQL {
  const col = (name: string) => sql.raw(`${alias}.${name}`);
  for (const state of s.states) if (!(JOB_STATES as readonly string[]).includes(state)) throw new TypeError(`not a job state: ${state}`);
  const where = [sql`${col("state")} in (${sql.raw(s.states.map((state) => `'${state}'`).join(", "))})`];
  if (s.task !== undefined) where.push(sql`${col("task")} = ${s.task}`);
  if (s.queue !== undefined) where.push(sql`${col("queue")} = ${s.queue}`);
  // (A tenant's jobs, with its sub-keys' too.)
  if (s.fairKey !== undefined) where.push(ofTenant(col("fair_key"), sql`${s.fairKey}::text`));
  if (s.createdBefore !== undefined) where.push(sql`${col("created_at")} <= ${s.createdBefore}`);
  if (s.createdAfter !== undefined) where.push(sql`${col("created_at")} > ${s.createdAfter}`);
  if (s.args !== undefined) where.push(sql`${col("args")} @> ${JSON.stringify(s.args)}::jsonb`);
  return sql.join(where, sql` and `);
}
