import { sql, type SQL } from "drizzle-orm";
import { msInterval } from "../time.js";

/** What `takeInvocationSlotsStatement` is asked for. */
export interface TakeSlots {
  scope: string;
  /** Slots 1..cap exist in the scope (`maxInvocations`). */
  cap: number;
  /** The most new slots to take, one per name in `holders` (in order). */
  count: number;
  /** The live invocations wanted in all (this one and any other of the scope included), or null for "as many as `count`". */
  total: number | null;
  holders: string[];
  chain: string;
  /** The invocation starting the holders: their registry rows are written with it (null when one takes its own slot). */
  startedBy: string | null;
  queues: string[] | null;
  now: SQL;
  /**
   * How long a slot is held unless renewed or released: past it, a holder that died (or never started) no
   * longer counts. A slot taken for another invocation lives only as long as that one has to start.
   */
  ttlMs: number;
}

/**
 * Takes up to `count` free slots of `scope` (at most `cap` live in all, at most `total` if given) for `holders`,
 * as one statement: a slot is a primary key (scope, slot), so two racing statements can never both hold one. A
 * slot taken by a concurrent statement after this one's snapshot is met by ON CONFLICT, which waits for it and
 * re-checks the row as committed: then it is skipped, never taken twice (a race takes fewer, never more). The
 * holders started by another invocation get their registry row at once, naming who started them.
 * Answers `[{ slot, holder }]`.
 */
export function takeInvocationSlotsStatement(t: TakeSlots): SQL {
  const now = t.now;
  return sql`
    with live as (
      select slot from akadze.invocation_slots where scope = ${t.scope} and holder is not null and expires_at > ${now}
    ),
    free as (
      select n, row_number() over (order by n) as i from generate_series(1, ${t.cap}::int) n
      where n not in (select slot from live)
    ),
    wanted as (
      select f.n, h.id from free f
      join jsonb_array_elements_text(${JSON.stringify(t.holders)}::jsonb) with ordinality h(id, i) on h.i = f.i
      where f.i <= least(${t.count}::int, ${t.cap}::int - (select count(*) from live),
        coalesce(${t.total}::int - (select count(*) from live), ${t.count}::int))
    ),
    taken as (
      insert into akadze.invocation_slots as s (scope, slot, holder, chain, taken_at, expires_at)
      select ${t.scope}, n, id, ${t.chain}, ${now}, ${now} + ${msInterval(sql`${t.ttlMs}`)} from wanted
      on conflict (scope, slot) do update set holder = excluded.holder, chain = excluded.chain,
        taken_at = excluded.taken_at, expires_at = excluded.expires_at
        where s.holder is null or s.expires_at <= excluded.taken_at
      returning s.slot, s.holder
    ),
    registered as (
      insert into akadze.workers (id, kind, queues, started_at, last_seen_at, started_by)
      select holder, 'invocation', ${JSON.stringify(t.queues ?? [])}::jsonb, ${now}, ${now}, ${t.startedBy}::text
      from taken where ${t.startedBy}::text is not null
      on conflict (id) do nothing
    )
    select coalesce((select jsonb_agg(jsonb_build_object('slot', slot, 'holder', holder) order by slot) from taken), '[]'::jsonb) as r`;
}
