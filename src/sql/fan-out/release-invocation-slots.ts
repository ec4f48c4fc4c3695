import { sql, type SQL } from "drizzle-orm";
import { msInterval } from "../time.js";

/**
 * Frees the slots `holders` hold in `scope` (an invocation that ended, or siblings that could not be invoked)
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

/**
 * Frees the slot taken for `holder` (a sibling or successor asked for, not running yet) only if its holder
 * never confirmed it: a slot is taken with `takeWithinMs` to live, and its holder's first statement extends it
 * far beyond (confirmInvocationSlotStatement), so one still due by `takeWithinMs` after it was taken was never confirmed.
 * Records it stopped in the registry if freed. Answers how many slots were freed (0 or 1).
 */
export function releaseUntakenSlotStatement(scope: string, holder: string, takeWithinMs: number, now: SQL): SQL {
  return sql`
    with released as (
      update akadze.invocation_slots set holder = null, expires_at = ${now}
      where scope = ${scope} and holder = ${holder} and expires_at <= taken_at + ${msInterval(sql`${takeWithinMs}`)}
      returning slot
    ),
    stopped as (
      update akadze.workers set stopped_at = ${now}, last_seen_at = greatest(last_seen_at, ${now})
      where id = ${holder} and exists (select 1 from released)
    )
    select to_jsonb((select count(*) from released)) as r`;
}
