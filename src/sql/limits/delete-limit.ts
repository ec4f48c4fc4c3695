import { sql, type SQL } from "drizzle-orm";

/** Removes a limit with its slots and tokens; running jobs keep running. */
export function deleteLimitStatement(key: string): SQL {
  return sql`
    with gone as (delete from akadze.limits where key = ${key} returning key),
    slots as (delete from akadze.limit_slots where key = ${key} returning slot),
    tokens as (delete from akadze.limit_tokens where key = ${key} returning slot)
    select to_jsonb(exists (select 1 from gone)) as r`;
}
