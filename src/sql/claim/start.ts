import { sql, type SQL } from "drizzle-orm";
import { archiveCtes } from "../history/archive.js";
import { msInterval, mustCancel } from "../time.js";

/**
 * A `maxStarts` token is taken again only this long after its last start plus the window: a body starts a
 * little after its token was stamped (the start statement's answer is on its way), and the engine refuses to
 * start a limited job whose answer took longer than this, so no window of handler start times ever holds
 * more than `maxStarts` starts. At most 1 s, and a tenth of a short window.
 */
export function tokenSlackMs(windowMs: SQL): SQL {
  return sql`least(1000, (${windowMs}) / 10)`;
}

/** A token row `t` of limit `l` is free at `now`. */
export function tokenFree(now: SQL): SQL {
  return sql`(t.last_start is null or t.last_start <= ${now} - ${msInterval(sql`l.window_ms + ${tokenSlackMs(sql`l.window_ms`)}`)})`;
}

/** What starting a group of prefetched jobs did: each requested id is in exactly one list, or in none if this run no longer holds it. */
export interface StartResult {
  /** Marked started: their bodies may run now. */
  started: number[];
  /** Jobs that took a `maxStarts` token, by id: how soon after the statement their body must start (ms). */
  slack: Record<string, number> | null;
  /** Cancelled or expired while they waited: `cancelled`, attempt refunded, never run. */
  stopped: { id: number; task: string; queue: string; attempt: number }[];
  /** No `maxRunning` slot or `maxStarts` token free: back to `queued`, attempt refunded. */
  denied: { id: number; task: string; queue: string; attempt: number }[];
}

/**
 * CTEs that start prefetched jobs this owner holds: mark them `started_at` (from then on a crash spends their
 * attempt), and for jobs a limit applies to take a free `maxRunning` slot and `maxStarts` token now, when
 * the body starts, not when the job was claimed. Limit slots and tokens are rows locked with SKIP LOCKED,
 * so concurrent invocations never over-grant. Idempotent: a job already marked by this owner counts as
 * started again (a retried request whose first answer was lost). `report`: the `StartResult`, as a json expression
 * for the statement's result (read from these CTEs; where no limit applies, its `denied` and `slack` are constants).
 */
export function startJobsCtes(owner: string, now: SQL, ids: number[], limited: boolean, locked: SQL = sql`true`): { ctes: SQL[]; report: SQL } {
  const stop = mustCancel(now);
  // (`locked`: the condition that takes the statement's row locks first, in id order; see lockedFirst.)
  const requested = sql`start_req as (
      select j.id, j.limit_key, j.priority, j.run_at, j.started_at is not null as already, ${stop} as stop
      from akadze.jobs j
      where j.id in (select value::bigint from jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb))
        and ${locked} and j.state = 'running' and j.lease_owner = ${owner}
    )`;
  // Cancelled or expired while they waited: out of the queue table, into the history, attempt refunded.
  const stopped = sql`start_stopped as (
      delete from akadze.jobs j using start_req r where j.id = r.id and r.stop and not r.already
      returning j.id, j.task, j.queue, j.args, 'cancelled'::text as state, j.priority, j.attempt - 1 as attempt, j.max_attempts, j.run_at,
        j.expires_at, j.unique_key, j.limit_key, j.limit_wait_ms, j.cancel_requested, j.errors, j.result, j.created_at, j.started_at,
        ${now} as finished_at, j.fair_key, j.trace_context
    ), ${sql.join(archiveCtes("start_stopped", sql`select * from start_stopped`, "history"), sql`, `)}`;
  if (!limited) {
    // (No limit applies to these jobs: none is denied nor takes a token, and the report says so as constants.)
    return { report: startReport(false), ctes: [requested, stopped, sql`started as (
      update akadze.jobs j set started_at = ${now}
      from start_req r where j.id = r.id and not r.already and not r.stop
      returning j.id
    )`] };
  }
  return { report: startReport(true), ctes: [
    requested, stopped,
    // Jobs that need a grant: a limit row exists for their key and they have not started yet.
    sql`start_need as (
      select r.* from start_req r where not r.already and not r.stop
        and exists (select 1 from akadze.limits l where l.key = r.limit_key)
    )`,
    sql`start_occupied as (
      select l.key, l.max_running - (select count(*) from akadze.limit_slots s where s.key = l.key and s.job_id is not null) as room
      from akadze.limits l where l.max_running is not null and l.key in (select limit_key from start_need)
    )`,
    // Only the first (maxRunning - occupied) free slots of a key may be taken. Slots outnumber
    // maxRunning after a limit was lowered below the running count; this keeps the extra ones inert,
    // and concurrent starts aim at the same first slots, so their row locks keep them apart.
    sql`start_free_slots as (
      select s.key, s.slot, row_number() over (partition by s.key order by s.slot) as rn
      from (select key, slot from akadze.limit_slots
            where (key, slot) in (
              select f.key, f.slot from (
                select f.key, f.slot, row_number() over (partition by f.key order by f.slot) as rank
                from akadze.limit_slots f where f.key in (select limit_key from start_need) and f.job_id is null
              ) f join start_occupied o on o.key = f.key where f.rank <= o.room)
              and job_id is null
            for update skip locked) s
    )`,
    sql`start_free_tokens as (
      select t.key, t.slot, row_number() over (partition by t.key order by t.slot) as rn
      from (select t.key, t.slot from akadze.limit_tokens t join akadze.limits l on l.key = t.key
            where t.key in (select limit_key from start_need) and ${tokenFree(now)}
            for update of t skip locked) t
    )`,
    sql`start_grants as (
      select l.key, least(
        case when l.max_running is null then 2147483647 else (select count(*) from start_free_slots f where f.key = l.key) end,
        case when l.max_starts is null then 2147483647 else (select count(*) from start_free_tokens f where f.key = l.key) end) as n
      from akadze.limits l where l.key in (select limit_key from start_need)
    )`,
    sql`start_granted as (
      select x.id, x.limit_key, x.rn from (
        select n.id, n.limit_key, row_number() over (partition by n.limit_key order by n.priority desc, n.run_at, n.id) as rn
        from start_need n
      ) x join start_grants g on g.key = x.limit_key where x.rn <= g.n
    )`,
    sql`start_took_slots as (
      update akadze.limit_slots s set job_id = c.id
      from start_granted c join start_free_slots f on f.key = c.limit_key and f.rn = c.rn
      where s.key = f.key and s.slot = f.slot
      returning s.key
    )`,
    sql`start_took_tokens as (
      update akadze.limit_tokens t set last_start = ${now}
      from start_granted c join start_free_tokens f on f.key = c.limit_key and f.rn = c.rn
      where t.key = f.key and t.slot = f.slot
      returning t.key
    )`,
    sql`started as (
      update akadze.jobs j set started_at = ${now}
      from start_req r where j.id = r.id and not r.already and not r.stop
        and (r.id not in (select id from start_need) or r.id in (select id from start_granted))
      returning j.id
    )`,
    sql`start_denied as (
      update akadze.jobs j set state = 'queued', attempt = j.attempt - 1, lease_owner = null, lease_expires_at = null, started_at = null
      from start_need n where j.id = n.id and n.id not in (select id from start_granted)
      returning j.id, j.task, j.queue, j.attempt
    )`,
  ] };
}

/** The `StartResult` of `startJobsCtes(..., limited)`'s CTEs. */
function startReport(limited: boolean): SQL {
  const side = (cte: string) => sql.raw(`coalesce((select json_agg(json_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt)) from ${cte}), '[]'::json)`);
  return sql`json_build_object(
    'started', (select coalesce(json_agg(id), '[]'::json) from (select id from started union all select id from start_req where already) s),
    'stopped', ${side("start_stopped")}, 'denied', ${limited ? side("start_denied") : sql`'[]'::json`},
    'slack', ${limited ? sql`(select json_object_agg(g.id, ${tokenSlackMs(sql`l.window_ms`)}) from start_granted g join akadze.limits l on l.key = g.limit_key where l.max_starts is not null)` : sql`null::json`})`;
}
