import { sql, type SQL } from "drizzle-orm";
import { msInterval } from "../time.js";

/**
 * An invocation started by fan-out confirms, before it claims anything, that the slot taken in its name is
 * still live, and extends it to `ttlMs` from now. Answers the slot number, or null: then it must not run (the
 * slot expired and may be someone else's, or the request named no slot at all).
 */
export function confirmInvocationSlotStatement(scope: string, holder: string, now: SQL, ttlMs: number): SQL {
  return sql`
    with confirmed as (
      update akadze.invocation_slots set expires_at = greatest(expires_at, ${now} + ${msInterval(sql`${ttlMs}`)})
      where scope = ${scope} and holder = ${holder} and expires_at > ${now}
      returning slot
    )
    select to_jsonb((select slot from confirmed limit 1)) as r`;
}
