import { sql, type SQL } from "drizzle-orm";
import { msInterval } from "../time.js";

/**
 * Continuation: an invocation whose budget ended with work due hands its slot to its successor in one
 * statement (the slot never falls free in between, so no other tick can take it meanwhile), registers the
 * successor as started by it, and records its own end. The successor has `takeWithinMs` to confirm the slot
 * (confirmInvocationSlotStatement): one that never runs leaves it free by then. Answers the slot number, or null if it
 * no longer had one (expired): then no successor may be invoked.
 */
export function passInvocationSlotStatement(o: {
  scope: string; from: string; to: string; queues: string[] | null; now: SQL; takeWithinMs: number;
  /** Only if no other invocation of the scope holds a live slot (the chain's last one carries on alone). */
  onlyIfLast?: boolean;
}): SQL {
  const now = o.now;
  return sql`
    with passed as (
      update akadze.invocation_slots set holder = ${o.to}, taken_at = ${now}, expires_at = ${now} + ${msInterval(sql`${o.takeWithinMs}`)}
      where scope = ${o.scope} and holder = ${o.from} and expires_at > ${now}
        ${o.onlyIfLast ? sql`and not exists (select 1 from akadze.invocation_slots x
          where x.scope = ${o.scope} and x.holder is not null and x.holder <> ${o.from} and x.expires_at > ${now})` : sql``}
      returning slot
    ),
    registered as (
      insert into akadze.workers (id, kind, queues, started_at, last_seen_at, started_by)
      select ${o.to}, 'invocation', ${JSON.stringify(o.queues ?? [])}::jsonb, ${now}, ${now}, ${o.from} from passed
      on conflict (id) do nothing
    ),
    stopped as (
      update akadze.workers set stopped_at = ${now}, last_seen_at = greatest(last_seen_at, ${now}) where id = ${o.from} and exists (select 1 from passed)
    )
    select to_jsonb((select slot from passed limit 1)) as r`;
}
