import { sql, type SQL } from "drizzle-orm";
import { JOB_SUMMARY_FIELDS } from "../claim/job-fields.js";

/** Which jobs `listJobsInOrderStatement` reads: every filter given must match. */
export interface JobsInOrderFilter {
  task?: string;
  queue?: string;
  /** Any of these states (at least one). */
  states?: string[];
  /** The job's args contain this JSON (`@>`: a partial object matches). */
  argsContain?: unknown;
}

/**
 * Every job matching the filter, oldest first (enqueue order: ids are given in order), with its args,
 * result and errors, as one jsonb array. For test helpers: no page size, the caller's database is a test's.
 */
export function listJobsInOrderStatement(filter: JobsInOrderFilter): SQL {
  const where = [sql`true`];
  if (filter.task !== undefined) where.push(sql`task = ${filter.task}`);
  if (filter.queue !== undefined) where.push(sql`queue = ${filter.queue}`);
  if (filter.states !== undefined) where.push(sql`state in (${sql.join(filter.states.map((state) => sql`${state}`), sql`, `)})`);
  if (filter.argsContain !== undefined) where.push(sql`args @> ${JSON.stringify(filter.argsContain)}::jsonb`);
  return sql`
    select coalesce(jsonb_agg(jsonb_build_object(${JOB_SUMMARY_FIELDS}, 'args', args, 'result', result, 'errors', errors) order by id), '[]'::jsonb) as r
    from akadze.all_jobs where ${sql.join(where, sql` and `)}`;
}
