import { sql, type SQL } from "drizzle-orm";
import type { ErrorEntry } from "../core/errors.js";

/** Appends each entry to its job's errors, in one statement (a job may get several). */
export function recordHookFailuresStatement(entries: { id: number; entry: ErrorEntry }[]): SQL {
  return sql`update akadze.jobs j set errors = j.errors || f.entries
    from (select (e->>'id')::bigint as id, jsonb_agg(e->'entry') as entries
          from jsonb_array_elements(${JSON.stringify(entries)}::jsonb) e group by 1) f
    where j.id = f.id`;
}
