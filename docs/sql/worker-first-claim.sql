-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.
with owner_leased as (
      insert into akadze.owners as o (owner, expires_at) values ($1, now() + ($2)::float8 * interval '1 millisecond')
      on conflict (owner) do update set expires_at = excluded.expires_at
    ), akadze_pruned_workers as (
    delete from akadze.workers where id in (
      select id from akadze.workers where last_seen_at < $3::timestamptz
      limit $4 for update skip locked)
    returning id), akadze_pruned_events as (
    delete from akadze.sent_events where (name, id) in (
      select name, id from akadze.sent_events where sent_at < $5::timestamptz
      limit $6 for update skip locked)
    returning id), akadze_pruned_windows as (
    delete from akadze.debounce_windows where (task, key) in (
      select task, key from akadze.debounce_windows where quiet_at < $7::timestamptz
      limit $8 for update skip locked)
    returning key), akadze_pruned_owners as (
      delete from akadze.owners o where o.owner in (
          select e.owner from akadze.owners e where e.expires_at < now() and e.owner <> $9
          order by e.expires_at limit $10 for update skip locked)
        and not exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = o.owner)
    ), 
    -- Due jobs without a turn, priority by priority: each priority's are one range of the index (due time up to
    -- now), so jobs not due yet are never read, however many there are. Keyed jobs with a turn are a fair claim's
    -- (jobs_tag_idx); a plain claim reports them (`fair`) and the next claim is fair.
    unlimited_candidates as (
      select x.* from (with recursive p(priority) as (
        (select j.priority from akadze.jobs j where j.state = 'queued' and j.fair_tag is null  order by j.priority desc nulls last limit 1)
        union all
        select (select j.priority from akadze.jobs j where j.state = 'queued' and j.fair_tag is null  and j.priority < p.priority
          order by j.priority desc nulls last limit 1)
        from p where p.priority is not null
      ) select priority from p where priority is not null) q cross join lateral (
        select j.id, j.priority, j.run_at, (j.cancel_requested or coalesce(j.expires_at <= now(), false)) as stop, false as limited, j.fair_key, j.fair_tag
        from akadze.jobs j
        where j.priority = q.priority and j.fair_tag is null and j.state = 'queued' and j.run_at <= now() and j.task = any(array(select jsonb_array_elements_text($11::jsonb)))
        and true
        and j.queue not in (select name from akadze.queues where paused) and j.fair_key is null and (j.limit_key is null or not exists (select 1 from akadze.limits l where l.key = j.limit_key))
        order by j.run_at, j.id
        limit 8
        for update of j skip locked
      ) x
      limit 8
    ),
    
    
    candidates as (
      select * from (select * from unlimited_candidates) c
      order by priority desc, run_at, id
      limit $12
    ),
    oversized as (select null::bigint as id, false as alone where false),
    too_large as (select null::bigint as id, null::text as task, null::text as queue, null::int as attempt where false),
    due as (
      select c.id, c.limited, row_number() over (order by c.limited, priority desc, run_at, id) <= $13 and not c.limited as start
      from candidates c where not c.stop 
        and c.id not in (select id from oversized)
    ),
    claimed as (
      -- (The lease is the owner's row, owner_leased above: the job's own expiry stays null, unindexed.)
      update akadze.jobs j set state = 'running', attempt = j.attempt + 1, lease_owner = $14,
        lease_expires_at = null, started_at = case when d.start then now() end,
        -- A claimed debounced job takes no more payloads, even if it goes back to queued: later ones start a new job.
        debounce_key = null
      -- (The batch as arrays, unnested: each job is read once, by its key. A join of the CTE itself let the planner
      -- pick a whole-table scan hashed against a batch it estimated at a quarter of the table, or, with the batch
      -- as an array condition too, read the whole batch once per job when it estimated the batch at one row.)
      from (select array_agg(id) as id, array_agg(start) as start, array_agg(limited) as limited from due) b,
        unnest(b.id, b.start, b.limited) as d(id, start, limited)
      where j.id = d.id
      returning j.id, j.task, j.queue, j.args, j.attempt, j.max_attempts, j.priority, j.run_at, d.start, d.limited
    ),
    
    cancelled as (select null::bigint as id, null::text as task, null::text as queue, null::int as attempt where false)
    select json_build_object(
      -- (Positional arrays, see ClaimedRow: an object per job cost Postgres twice as much to build.)
      'claimed', coalesce((select json_agg(json_build_array(id, task, queue, args, attempt, max_attempts, priority, start, limited)
        order by priority desc, run_at, id) from claimed), '[]'::json),
      'cancelled', coalesce((select json_agg(json_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt,
        'from', 'queued', 'to', 'cancelled')) from "cancelled" ), '[]'::json),
      'rateLimited', '[]'::json,
      'tooLarge', coalesce((select json_agg(json_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt,
        'from', 'queued', 'to', 'failed')) from "too_large" ), '[]'::json),
      'more', exists (select 1 from oversized where not alone),
      'limits', exists (select 1 from akadze.limits),
      'stops', exists (select 1 from akadze.jobs where state = 'queued' and (expires_at is not null or cancel_requested)),
      'fair', (select fair_key from akadze.jobs where state = 'queued' and fair_key is not null order by fair_key collate "C" limit 1) is not null, $15::text, (exists (
      with recursive leasing(owner) as (
        select (select j.lease_owner from akadze.jobs j where j.state = 'running' order by j.lease_owner limit 1)
        union all
        select (select j.lease_owner from akadze.jobs j where j.state = 'running' and j.lease_owner > l.owner order by j.lease_owner limit 1)
        from leasing l where l.owner is not null
      )
      select 1 from leasing l where l.owner is not null and l.owner <> $16
        and not exists (select 1 from akadze.owners o where o.owner = l.owner and o.expires_at >= now())
        and exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = l.owner and j.lease_expires_at is null))
      or (select j.lease_expires_at from akadze.jobs j where j.state = 'running' and j.lease_expires_at is not null
        and j.lease_expires_at < now() order by j.lease_expires_at limit 1) is not null), $17::text, exists (select 1 from akadze.schedules where runtime and not paused), $18::text, akadze.history_due(now(), $19::float8, $20::bigint), $21::text, (select count(*) from claimed) >= $22 and exists (
      select 1 from pg_class c where c.oid = 'akadze.jobs'::regclass
        and case when c.reltuples < 0 then pg_relation_size(c.oid) > 262144
                 else pg_stat_get_mod_since_analyze(c.oid) > 10000 + 0.05 * c.reltuples
                   and coalesce(greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)) < now() - interval '10 seconds', true) end), $23::text, ($24::boolean and pg_stat_get_dead_tuples('akadze.jobs'::regclass) > 5000 + 2 * greatest(
      (select reltuples from pg_class where oid = 'akadze.jobs'::regclass), 0))
    ) as r
