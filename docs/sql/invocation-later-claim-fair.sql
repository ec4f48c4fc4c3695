-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.
with owner_leased as (
      insert into akadze.owners as o (owner, expires_at) values ($1, now() + ($2)::float8 * interval '1 millisecond')
      on conflict (owner) do update set expires_at = excluded.expires_at
    ),  limit_full as (
      select l.key from akadze.limits l
      where (l.max_running is not null
          and (select count(*) from akadze.limit_slots s where s.key = l.key and s.job_id is not null) >= l.max_running)
        or (l.max_starts is not null and not exists (select 1 from akadze.limit_tokens t where t.key = l.key
          and (t.last_start is null or t.last_start <= now() - (l.window_ms + least(1000, (l.window_ms) / 10))::float8 * interval '1 millisecond')))
    ),
    rate_limited as (
      delete from akadze.jobs j
      using (select j.id from akadze.jobs j
            where j.state = 'queued' and j.run_at <= now() and j.task = any(array(select jsonb_array_elements_text($3::jsonb)))
        and true
        and j.queue not in (select name from akadze.queues where paused) and not (j.cancel_requested or coalesce(j.expires_at <= now(), false)) and (j.limit_wait_ms is not null
    and j.run_at < now() - j.limit_wait_ms::float8 * interval '1 millisecond'
    and j.limit_key in (select key from limit_full))
            order by j.run_at limit $4 for update of j skip locked) x
      where j.id = x.id
      returning j.id, j.task, j.queue, j.args, 'rate_limited'::text as state, j.priority, j.attempt, j.max_attempts, j.run_at, j.expires_at,
        j.unique_key, j.limit_key, j.limit_wait_ms, j.cancel_requested, j.errors, j.result, j.created_at, j.started_at, now() as finished_at, j.fair_key, j.trace_context
    ),
    "rate_limited_history" as (insert into akadze.job_history (id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key, limit_wait_ms, cancel_requested, errors, result, created_at, started_at, finished_at, fair_key, trace_context)
      select id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key, limit_wait_ms, cancel_requested, errors, result, created_at, started_at, finished_at, fair_key, trace_context from (select * from rate_limited) f ),
    fair_vt as (select coalesce((select tag from akadze.fair_cursor where id = 1), 0) as vt), fair_parked as (
      select p.id, p.fair_key, p.priority, p.run_at from akadze.jobs p
      where p.state = 'queued' and p.fair_key is not null and p.fair_tag is null and p.run_at <= now()
      order by p.run_at limit 1000
      for update of p skip locked
    ), fair_candidates as (
      select j.id, j.priority, j.run_at, (j.cancel_requested or coalesce(j.expires_at <= now(), false)) as stop, false as limited, j.fair_key, j.fair_tag
      from akadze.jobs j
      where j.fair_tag is not null and j.state = 'queued' and j.run_at <= now() and j.task = any(array(select jsonb_array_elements_text($5::jsonb)))
        and true
        and j.queue not in (select name from akadze.queues where paused) and (j.limit_key is null or not exists (select 1 from akadze.limits l where l.key = j.limit_key))
      order by j.priority desc nulls last, j.fair_tag, j.run_at, j.id
      limit 2
      for update of j skip locked
    ), fair_lowest as (
      select min(priority) as priority, max(fair_tag) filter (where priority = (select min(priority) from fair_candidates)) as tag,
        count(*) filter (where priority > (select min(priority) from fair_candidates)) as higher
      from fair_candidates
    ), fair_more as (
      select j.id, j.priority, j.run_at, (j.cancel_requested or coalesce(j.expires_at <= now(), false)) as stop, false as limited, j.fair_key, j.fair_tag
      from akadze.jobs j
      where j.fair_tag is not null and j.priority = (select priority from fair_lowest) and j.fair_tag >= (select tag from fair_lowest)
        and j.state = 'queued' and j.run_at <= now() and j.task = any(array(select jsonb_array_elements_text($6::jsonb)))
        and true
        and j.queue not in (select name from akadze.queues where paused) and (j.limit_key is null or not exists (select 1 from akadze.limits l where l.key = j.limit_key)) and j.id not in (select id from fair_candidates)
      order by j.priority desc nulls last, j.fair_tag, j.run_at, j.id
      limit (select higher from fair_lowest)
      for update of j skip locked
    ),
    -- Due jobs without a turn, priority by priority: each priority's are one range of the index (due time up to
    -- now), so jobs not due yet are never read, however many there are. Keyed jobs with a turn are a fair claim's
    -- (jobs_tag_idx); a plain claim reports them (`fair`) and the next claim is fair.
    unlimited_candidates as (select * from (
      select x.* from (with recursive p(priority) as (
        (select j.priority from akadze.jobs j where j.state = 'queued' and j.fair_tag is null  order by j.priority desc nulls last limit 1)
        union all
        select (select j.priority from akadze.jobs j where j.state = 'queued' and j.fair_tag is null  and j.priority < p.priority
          order by j.priority desc nulls last limit 1)
        from p where p.priority is not null
      ) select priority from p where priority is not null) q cross join lateral (
        select j.id, j.priority, j.run_at, (j.cancel_requested or coalesce(j.expires_at <= now(), false)) as stop, false as limited, j.fair_key, j.fair_tag
        from akadze.jobs j
        where j.priority = q.priority and j.fair_tag is null and j.state = 'queued' and j.run_at <= now() and j.task = any(array(select jsonb_array_elements_text($7::jsonb)))
        and true
        and j.queue not in (select name from akadze.queues where paused) and (j.limit_key is null or not exists (select 1 from akadze.limits l where l.key = j.limit_key)) 
        order by j.run_at, j.id
        limit 2
        for update of j skip locked
      ) x
      limit 2
    ) u limit (select greatest($8 - count(*), 1, least($9, ceil(max(fair_tag) - (select vt from fair_vt))))::int from fair_candidates)),
    
    room as (
      select l.key, least($10,
        case when l.max_running is null then $11
             else l.max_running - (select count(*) from akadze.limit_slots s where s.key = l.key and s.job_id is not null) end,
        case when l.max_starts is null then $12
             else (select count(*) from akadze.limit_tokens t where t.key = l.key and (t.last_start is null or t.last_start <= now() - (l.window_ms + least(1000, (l.window_ms) / 10))::float8 * interval '1 millisecond')) end) as n
      from akadze.limits l
    ), limited_candidates as (
      select x.* from room r cross join lateral (
        select * from (
          select j.id, j.priority, j.run_at, (j.cancel_requested or coalesce(j.expires_at <= now(), false)) as stop, true as limited, j.fair_key, j.fair_tag
          from akadze.jobs j
          where j.limit_key = r.key and j.state = 'queued' and j.run_at <= now() and j.task = any(array(select jsonb_array_elements_text($13::jsonb)))
        and true
        and j.queue not in (select name from akadze.queues where paused)
          -- (nulls last, as the index is declared: priority is never null, but only then the index gives the order)
          order by j.priority desc nulls last, j.run_at, j.id
          limit $14
          for update of j skip locked
        ) y limit r.n
      ) x
      where r.n > 0
    ),
    candidates as (
      select c.id, c.priority, c.run_at, c.stop, c.limited, c.fair_key, c.fair_rank, null::int as walk
      from (
        select u.id, u.priority, u.run_at, u.stop, u.limited, u.fair_key,
          case when u.fair_tag is null then (select vt from fair_vt) + u.k - 1
            else coalesce(nth_value(u.fair_tag, u.k::int) over (partition by u.fair_key order by u.fair_tag
              rows between unbounded preceding and unbounded following), (select vt from fair_vt)) end as fair_rank
        from (select o.*, row_number() over (partition by o.fair_key order by o.priority desc, o.fair_tag, o.run_at, o.id) as k
          from (select * from unlimited_candidates union all select * from limited_candidates union all select * from fair_candidates union all select * from fair_more) o) u
      ) c
      order by c.priority desc, c.fair_rank, c.run_at, c.id
      limit $15
    ),
    oversized as (select null::bigint as id, false as alone where false),
    too_large as (select null::bigint as id, null::text as task, null::text as queue, null::int as attempt where false),
    due as (
      select c.id, c.limited, row_number() over (order by c.limited, priority desc, fair_rank, walk nulls last, run_at, id) <= $16 and not c.limited as start, c.fair_rank, c.walk
      from candidates c where not c.stop and c.id not in (select id from rate_limited)
        and c.id not in (select id from oversized)
    ),
    claimed as (
      -- (The lease is the owner's row, owner_leased above: the job's own expiry stays null, unindexed.)
      update akadze.jobs j set state = 'running', attempt = j.attempt + 1, lease_owner = $17,
        lease_expires_at = null, started_at = case when d.start then now() end,
        -- A claimed debounced job takes no more payloads, even if it goes back to queued: later ones start a new job.
        debounce_key = null
      -- (The batch as arrays, unnested: each job is read once, by its key. A join of the CTE itself let the planner
      -- pick a whole-table scan hashed against a batch it estimated at a quarter of the table, or, with the batch
      -- as an array condition too, read the whole batch once per job when it estimated the batch at one row.)
      from (select array_agg(id) as id, array_agg(start) as start, array_agg(limited) as limited, array_agg(fair_rank) as fair_rank, array_agg(walk) as walk from due) b,
        unnest(b.id, b.start, b.limited, b.fair_rank, b.walk) as d(id, start, limited, fair_rank, walk)
      where j.id = d.id
      returning j.id, j.task, j.queue, j.args, j.attempt, j.max_attempts, j.priority, j.run_at, d.start, d.limited, d.fair_rank, d.walk, j.fair_key
    ),
    fair_vt_next as (select greatest((select vt from fair_vt), (select max(fair_rank) from claimed)) as tag), fair_unparked as (
      update akadze.jobs j set fair_tag = t.tag from (
        select p.id, k.first + (row_number() over (partition by p.fair_key order by p.priority desc, p.run_at, p.id) - 1) * k.step as tag
        from fair_parked p join (select k.fair_key, (greatest(greatest((select tag from fair_vt_next),
            (select max(c.fair_rank) from claimed c where c.fair_key = k.fair_key) + (1.0 / coalesce((select weight from akadze.fair_weights where key = split_part(k.fair_key, chr(1), 1)), 1))), (select j.fair_tag from akadze.jobs j where j.state = 'queued' and j.fair_tag is not null and j.fair_key = k.fair_key
      order by j.fair_tag desc limit 1) + (1.0 / coalesce((select weight from akadze.fair_weights where key = split_part(k.fair_key, chr(1), 1)), 1))) + (1 - 1) * (1.0 / coalesce((select weight from akadze.fair_weights where key = split_part(k.fair_key, chr(1), 1)), 1))) as first, (1.0 / coalesce((select weight from akadze.fair_weights where key = split_part(k.fair_key, chr(1), 1)), 1)) as step
          from (select distinct fair_key from fair_parked) k) k on k.fair_key = p.fair_key
      ) t
      where j.id = t.id and j.id not in (select id from claimed)
      returning j.id
    ), fair_vt_moved as (
      update akadze.fair_cursor f set tag = n.tag from fair_vt_next n
      where f.id = (select id from akadze.fair_cursor where id = 1 for update skip locked) and n.tag > f.tag
      returning f.id
    ), fair_vt_first as (
      insert into akadze.fair_cursor (id, key, tag) select 1, '', tag from fair_vt_next
      where tag is not null and not exists (select 1 from akadze.fair_cursor)
      on conflict do nothing
      returning id
    ),
    akadze_seen as (
    insert into akadze.workers as w (id, kind, queues, started_at, last_seen_at)
    select $18, 'invocation', $19::jsonb, $20::timestamptz, $21::timestamptz
    where exists (select 1 from claimed)
    on conflict (id) do update set last_seen_at = greatest(w.last_seen_at, excluded.last_seen_at), stopped_at = null,
      queues = excluded.queues
    returning w.id),
    cancelled as (select null::bigint as id, null::text as task, null::text as queue, null::int as attempt where false)
    select json_build_object(
      -- (Positional arrays, see ClaimedRow: an object per job cost Postgres twice as much to build.)
      'claimed', coalesce((select json_agg(json_build_array(id, task, queue, args, attempt, max_attempts, priority, start, limited)
        order by priority desc, fair_rank, walk nulls last, run_at, id) from claimed), '[]'::json),
      'cancelled', coalesce((select json_agg(json_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt,
        'from', 'queued', 'to', 'cancelled')) from "cancelled" ), '[]'::json),
      'rateLimited', coalesce((select json_agg(json_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt,
        'from', 'queued', 'to', 'rate_limited')) from "rate_limited" ), '[]'::json),
      'tooLarge', coalesce((select json_agg(json_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt,
        'from', 'queued', 'to', 'failed')) from "too_large" ), '[]'::json),
      'more', exists (select 1 from oversized where not alone),
      'limits', exists (select 1 from akadze.limits),
      'stops', exists (select 1 from akadze.jobs where state = 'queued' and (expires_at is not null or cancel_requested)),
      'fair', (select fair_key from akadze.jobs where state = 'queued' and fair_key is not null order by fair_key collate "C" limit 1) is not null, 'fairSubKeys', (exists (select 1 from fair_candidates where strpos(fair_key, chr(1)) > 0)
      or not exists (select 1 from fair_candidates) and exists (select 1 from (
        select j.fair_key from akadze.jobs j where j.state = 'queued' and j.fair_tag is not null and j.run_at <= now()
        order by j.priority desc nulls last, j.fair_tag, j.run_at, j.id limit 2) t
      where strpos(t.fair_key, chr(1)) > 0)), 'parkedDue', coalesce((select j.run_at from akadze.jobs j where j.state = 'queued' and j.fair_key is not null and j.fair_tag is null
      order by j.run_at limit 1) <= now(), false),
      'fairPriorities', coalesce((select min(priority) <> max(priority) from fair_candidates), false), 'plainDue', exists (select 1 from (with recursive p(priority) as (
        (select j.priority from akadze.jobs j where j.state = 'queued' and j.fair_tag is null  order by j.priority desc nulls last limit 1)
        union all
        select (select j.priority from akadze.jobs j where j.state = 'queued' and j.fair_tag is null  and j.priority < p.priority
          order by j.priority desc nulls last limit 1)
        from p where p.priority is not null
      ) select priority from p where priority is not null) q
      where exists (select 1 from akadze.jobs j where j.state = 'queued' and j.fair_tag is null and j.priority = q.priority and j.run_at <= now())), $22::text, exists (select 1 from akadze.schedules where runtime and not paused), $23::text, (select count(*) from claimed) >= $24 and exists (
      select 1 from pg_class c where c.oid = 'akadze.jobs'::regclass
        and case when c.reltuples < 0 then pg_relation_size(c.oid) > 262144
                 else pg_stat_get_mod_since_analyze(c.oid) > 10000 + 0.05 * c.reltuples
                   and coalesce(greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)) < now() - interval '10 seconds', true) end), $25::text, ($26::boolean and pg_stat_get_dead_tuples('akadze.jobs'::regclass) > 5000 + 2 * greatest(
      (select reltuples from pg_class where oid = 'akadze.jobs'::regclass), 0))
    ) as r
