-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.
-- The schedules rider: what it adds to a claim (src/runtime/riders.ts); $n are bound per claim.
-- Before the core's CTEs:
sched_offered as (
      select * from jsonb_to_recordset($1::jsonb) as d(name text, task text, slots jsonb, ends boolean, queue text, args jsonb,
        priority smallint, max_attempts int, catch_up int, skip boolean, revision int)
    ),
sched_due as (
      select d.name, d.task, d.queue, d.args, d.priority, d.max_attempts, d.catch_up, d.skip, d.revision, d.slots, c.slot, c.next_slot,
        c.slot > now() - ($1)::float8 * interval '1 millisecond' as fire_if_new
      from sched_offered d
      cross join lateral (select max(x::timestamptz) filter (where x::timestamptz <= now()) as slot,
          min(x::timestamptz) filter (where x::timestamptz > now()) as next_slot
        from jsonb_array_elements_text(d.slots) x) c
      where c.slot is not null and (c.next_slot is not null or d.ends)
    ),
sched_locked as (
      select s.name, s.last_slot as prior, s.next_slot as floor,
        coalesce((s.last_slot is null or s.last_slot < d.slot) and (not s.runtime or s.next_slot <= d.slot), false) as advance,
        d.skip and exists (select 1 from akadze.jobs j where j.id = s.last_job_id) as busy
      from akadze.schedules s join sched_due d on d.name = s.name
      where s.runtime = (d.revision is not null)
        and (d.revision is null or (s.revision = d.revision and not s.paused))
        and (s.last_slot is null or s.last_slot < d.slot or s.task <> d.task or s.seen_at < now() - interval '1 minute')
      order by s.name
      for update of s
    ),
sched_fired as (
      select f.name, f.slot, f.rank, nextval(pg_get_serial_sequence('akadze.jobs', 'id')) as id
      from (
        select d.name, x.slot, d.catch_up, row_number() over (partition by d.name order by x.slot desc) as rank
        from sched_due d
        left join sched_locked l on l.name = d.name
        cross join lateral (select y::timestamptz as slot from jsonb_array_elements_text(d.slots) y) x
        where x.slot <= now() and (
          (l.advance and not l.busy and (l.prior is null or x.slot > l.prior) and (l.floor is null or x.slot >= l.floor))
          or (l.name is null and d.revision is null and d.fire_if_new and x.slot = d.slot
            and not exists (select 1 from akadze.schedules s where s.name = d.name)))
      ) f
      where f.rank <= f.catch_up
    ),
sched_updated as (
      update akadze.schedules s set
        last_slot = case when l.advance then d.slot else s.last_slot end,
        next_slot = case when l.advance and s.runtime then d.next_slot else s.next_slot end,
        last_job_id = coalesce((select f.id from sched_fired f where f.name = l.name and f.rank = 1), s.last_job_id),
        task = d.task, seen_at = now()
      from sched_locked l join sched_due d on d.name = l.name
      where s.name = l.name
      returning s.name
    ),
sched_added as (
      insert into akadze.schedules (name, task, last_slot, seen_at, last_job_id)
      select d.name, d.task, d.slot, now(), (select f.id from sched_fired f where f.name = d.name and f.rank = 1) from sched_due d
      where d.revision is null and not exists (select 1 from akadze.schedules s where s.name = d.name)
        and (select count(*) from sched_locked) >= 0 -- take every row lock before inserting (lock order)
      order by d.name
      on conflict (name) do nothing
      returning name
    ),
scheduled_jobs as (
      insert into akadze.jobs (id, task, queue, args, priority, max_attempts, run_at, created_at)
      overriding system value
      select f.id, d.task, d.queue, d.args, d.priority, d.max_attempts, f.slot, now()
      from sched_fired f join sched_due d on d.name = f.name
      where f.name in (select name from sched_locked) or f.name in (select name from sched_added)
      order by d.name, f.slot
      returning id
    ),
sched_runtime_due as (
    select s.name, s.task, s.args, s.cron, s.timezone, s.every_ms, s.catch_up, s.skip_overlap, s.revision
    from akadze.schedules s
    where s.runtime and not s.paused and s.next_slot <= now()
      and s.task = any(array(select jsonb_array_elements_text($1::jsonb)))
      and not exists (select 1 from jsonb_to_recordset($2::jsonb) as o(name text, revision int)
        where o.name = s.name and o.revision = s.revision)
    order by s.next_slot
    limit 100
  )
-- Reported in the answer:
'scheduled', (select count(*) from scheduled_jobs),
'schedules', jsonb_build_object('now', extract(epoch from now()) * 1000,
      'due', (select jsonb_object_agg(name, extract(epoch from slot) * 1000) from sched_due),
      'gone', (select jsonb_agg(o.name) from sched_offered o where o.revision is not null and not exists (
        select 1 from akadze.schedules s where s.name = o.name and s.runtime and s.revision = o.revision and not s.paused))),
'runtimeDue', (select jsonb_agg(jsonb_build_object('name', name, 'task', task, 'args', args, 'cron', cron, 'timezone', timezone,
      'everyMs', every_ms, 'catchUp', catch_up, 'skip', skip_overlap, 'revision', revision)) from sched_runtime_due),
'runtimeAny', exists (select 1 from akadze.schedules where runtime and not paused)
