-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.
-- The registry rider: what it adds to a claim (src/runtime/riders.ts); $n are bound per claim.
-- After the core's `claimed`:
akadze_seen as (
    insert into akadze.workers as w (id, kind, queues, started_at, last_seen_at)
    select $1, 'invocation', $2::jsonb, $3::timestamptz, $4::timestamptz
    where exists (select 1 from claimed)
    on conflict (id) do update set last_seen_at = greatest(w.last_seen_at, excluded.last_seen_at), stopped_at = null,
      queues = excluded.queues
    returning w.id)
