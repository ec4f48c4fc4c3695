import { sql, type SQL } from "drizzle-orm";

/**
 * Frees the slots `holders` hold in `scope` (an invocation that ended, or siblings that could not be started)
 * and records them stopped in the registry, in one statement. Answers how many slots were freed.
 */
export function releaseInvocationSlotsStatement(scope: string, holders: string[], now: SQL): SQL {
  const names = sql`(select jsonb_array_elements_text(${JSON.stringify(holders)}::jsonb))`;
  return sql`
    with released as (
      update akadze.invocation_slots set holder = null, expires_at = ${now}
      where scope = ${scope} and holder in ${names}
      returning slot
    ),
    stopped as (
      update akadze.workers set stopped_at = ${now}, last_seen_at = greatest(last_seen_at, ${now}) where id in ${names}
    )
    select to_jsonb((select count(*) from released)) as r`;
}
