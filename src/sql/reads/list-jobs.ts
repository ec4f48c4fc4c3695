import { sql, type SQL } from "drizzle-orm";
import { JOB_SUMMARY_FIELDS } from "../claim/job-fields.js";

/** Which jobs `listJobsStatement` reads: every filter given must match. */
export interface JobListFilter { state?: string; queue?: string; task?: string; beforeId?: number; limit: number }

/** The newest `limit` jobs matching the filter (ids below `beforeId`: the next page), as one jsonb array or null. */
export function listJobsStatement(filter: JobListFilter): SQL {
  const where = [sql`true`];
  if (filter.state) where.push(sql`state = ${filter.state}`);
  if (filter.queue) where.push(sql`queue = ${filter.queue}`);
  if (filter.task) where.push(sql`task = ${filter.task}`);
  if (filter.beforeId) where.push(sql`id < ${filter.beforeId}`);
  return sql`
    select jsonb_agg(jsonb_build_object(${JOB_SUMMARY_FIELDS}) order by id desc) as r
    from (select * from akadze.all_jobs where ${sql.join(where, sql` and `)} order by id desc limit ${filter.limit}) j`;
}
