import { sql, type SQL } from "drizzle-orm";
import type { ErrorEntry } from "../../core/errors.js";

/** Appends each entry to its job's errors, in one statement (a job may get several), wherever the job now lives. */
export function recordHookFailuresStatement(entries: { id: number; entry: ErrorEntry }[]): SQL {
  const update = (table: string) => sql`update ${sql.raw(table)} j set errors = j.errors || f.entries from f where j.id = f.id`;
  return sql`with f as (select (e->>'id')::bigint as id, jsonb_agg(e->'entry') as entries
          from jsonb_array_elements(${JSON.stringify(entries)}::jsonb) e group by 1),
    in_jobs as (${update("akadze.jobs")}),
    in_history as (${update("akadze.job_history")})
    ${update("akadze.failed_jobs")}`;
}
