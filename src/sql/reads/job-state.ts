import { sql, type SQL } from "drizzle-orm";

/** A job's state and task as jsonb `{ state, task }`, or null for an unknown id: what a poll or a check of new args needs, without the args and result. */
export function jobStateStatement(jobId: number): SQL {
  return sql`select jsonb_build_object('state', state, 'task', task) as r from akadze.all_jobs where id = ${jobId}`;
}
