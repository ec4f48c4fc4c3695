-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.
-- The retention rider: what it adds to a claim (src/runtime/riders.ts); $n are bound per claim.
-- Before the core's CTEs:
akadze_pruned_workers as (
    delete from akadze.workers where id in (
      select id from akadze.workers where last_seen_at < $1::timestamptz
      limit $2 for update skip locked)
    returning id),
akadze_pruned_events as (
    delete from akadze.sent_events where (name, id) in (
      select name, id from akadze.sent_events where sent_at < $1::timestamptz
      limit $2 for update skip locked)
    returning id),
akadze_pruned_windows as (
    delete from akadze.debounce_windows where (task, key) in (
      select task, key from akadze.debounce_windows where quiet_at < $1::timestamptz
      limit $2 for update skip locked)
    returning key),
akadze_pruned_owners as (
      delete from akadze.owners o where o.owner in (
          select e.owner from akadze.owners e where e.expires_at < now() and e.owner <> $1
          order by e.expires_at limit $2 for update skip locked)
        and not exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = o.owner)
    )
