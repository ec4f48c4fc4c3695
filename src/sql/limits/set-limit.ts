import { sql, type SQL } from "drizzle-orm";

/** The fields of a limit to change; `undefined` keeps the current value, `null` removes it. */
export interface LimitChange { maxStarts?: number | null; windowMs?: number | null; maxRunning?: number | null }

/**
 * Creates or changes a limit and resizes its `maxStarts` tokens (one per start inside the window).
 * Shrinking keeps the most recent starts, so the new, lower limit already counts them.
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
    ranked as (
      select t.key, t.slot, row_number() over (order by t.last_start desc nulls last, t.slot) as rank
      from akadze.limit_tokens t where t.key = ${key}
    ),
    tokens_removed as (
      delete from akadze.limit_tokens t using ranked r, l
      where t.key = r.key and t.slot = r.slot and r.rank > coalesce(l.max_starts, 0)
      returning t.slot
    ),
    recent_starts as (
      -- A first maxStarts limit counts the key's latest starts, so jobs started just before it was
      -- set still use up the window. (Later changes keep the tokens' own history.)
      -- Live and finished ones (the history by its limit-key index, newest first).
      select s.started_at, row_number() over (order by s.started_at desc) as g
      from (
        select j.started_at from akadze.jobs j where j.limit_key = ${key} and j.started_at is not null
        union all (select h.started_at from akadze.job_history h where h.limit_key = ${key} and h.started_at is not null
          order by h.started_at desc limit (select coalesce(max_starts, 0) from l))
        union all (select f.started_at from akadze.failed_jobs f where f.limit_key = ${key} and f.started_at is not null)
      ) s
      where not exists (select 1 from ranked)
    ),
    tokens_added as (
      -- New numbers above every existing one: the deletes above run in the same statement.
      insert into akadze.limit_tokens (key, slot, last_start)
      select l.key, (select coalesce(max(slot), 0) from ranked) + g, (select r.started_at from recent_starts r where r.g = g.g)
      from l, generate_series(1, coalesce(l.max_starts, 0) - (select count(*) from ranked)) g
      returning slot
    )
    select (select jsonb_build_object('key', key, 'maxStarts', max_starts, 'windowMs', window_ms, 'maxRunning', max_running) from l) as r`;
}
