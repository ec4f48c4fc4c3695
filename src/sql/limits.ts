import { sql, type SQL } from "drizzle-orm";

/** The fields of a limit to change; `undefined` keeps the current value, `null` removes it. */
export interface LimitChange { maxStarts?: number | null; windowMs?: number | null; maxRunning?: number | null }

/**
 * Creates or changes a limit in one statement and sizes its slot rows (one per concurrent run) and
 * token rows (one per start inside the window) to match.
 */
export function setLimitStatement(key: string, change: LimitChange): SQL {
  const keep = (value: number | null | undefined) => (value === undefined ? sql`null` : sql`${value}::bigint`);
  const present = (value: number | null | undefined) => sql`${value !== undefined}::boolean`;
  return sql`
    with l as (
      insert into akadze.limits as cur (key, max_starts, window_ms, max_running, updated_at)
      values (${key}, ${keep(change.maxStarts)}, ${keep(change.windowMs)}, ${keep(change.maxRunning)}, now())
      on conflict (key) do update set
        max_starts = case when ${present(change.maxStarts)} then excluded.max_starts else cur.max_starts end,
        window_ms = case when ${present(change.windowMs)} then excluded.window_ms else cur.window_ms end,
        max_running = case when ${present(change.maxRunning)} then excluded.max_running else cur.max_running end,
        updated_at = now()
      returning key, max_starts, window_ms, max_running
    ),
    slots_added as (
      insert into akadze.limit_slots (key, slot)
      select l.key, g from l, generate_series(1, coalesce(l.max_running, 0)) g on conflict do nothing returning slot
    ),
    slots_removed as (
      delete from akadze.limit_slots s using l where s.key = l.key and s.slot > coalesce(l.max_running, 0) returning slot
    ),
    tokens_added as (
      insert into akadze.limit_tokens (key, slot)
      select l.key, g from l, generate_series(1, coalesce(l.max_starts, 0)) g on conflict do nothing returning slot
    ),
    tokens_removed as (
      delete from akadze.limit_tokens t using l where t.key = l.key and t.slot > coalesce(l.max_starts, 0) returning slot
    )
    select (select jsonb_build_object('key', key, 'maxStarts', max_starts, 'windowMs', window_ms, 'maxRunning', max_running) from l) as r`;
}

/** Removes a limit with its slots and tokens; running jobs keep running. */
export function deleteLimitStatement(key: string): SQL {
  return sql`
    with gone as (delete from akadze.limits where key = ${key} returning key),
    slots as (delete from akadze.limit_slots where key = ${key} returning slot),
    tokens as (delete from akadze.limit_tokens where key = ${key} returning slot)
    select to_jsonb(exists (select 1 from gone)) as r`;
}
