-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.
with settle_locked as (select array(
      select l.id from akadze.jobs l
      where l.id in (select value::bigint from jsonb_array_elements_text($1::jsonb)) and l.state = 'running' and l.lease_owner = $2
      order by l.id for update) as ids),
    o_now as (select now() as now),
    -- (A plain success comes as its id alone, attempt null: it ends the job, so it cannot be mistaken for a later
    -- run's outcome; a later claim's copy of the job waits in the engine until this settle is answered, job-life.ts.)
    o as (select value::bigint as id, null::jsonb as result, null::int as attempt
          from jsonb_array_elements_text($3::jsonb)
          union all
          select * from jsonb_to_recordset($4::jsonb) as o(id bigint, result jsonb, attempt int)),
    -- Every settled job leaves the queue table, deciding its next state on the row it deleted (the latest
    -- version, so a cancel request that committed meanwhile counts); a job that runs again is written back.
    -- An outcome ends only the run of its attempt: the same engine may have claimed the job again since (a
    -- retried settle whose first try committed, a lease that lapsed), and that run is not this one's. (A plain
    -- success names none, see o.)
    settled as (
      delete from akadze.jobs j using o, o_now
      where j.id = o.id and (select ids from settle_locked) is not null and j.state = 'running' and j.lease_owner = $5 and (o.attempt is null or j.attempt = o.attempt)
      returning j.id, j.task, j.queue, j.args, 'succeeded'::text as state, 'succeeded'::text as kind, o.result as o_result, null::jsonb as o_error, false as refund, j.priority, j.attempt, j.max_attempts, j.run_at, j.expires_at,
        j.unique_key, j.limit_key, j.limit_wait_ms, j.cancel_requested, j.errors, j.result, j.created_at, j.started_at, j.fair_key, j.trace_context,
        o_now.now as at
    ),
    "settled_history" as (insert into akadze.job_history (id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key, limit_wait_ms, cancel_requested, errors, result, created_at, started_at, finished_at, fair_key, trace_context)
      select id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key, limit_wait_ms, cancel_requested, errors, result, created_at, started_at, finished_at, fair_key, trace_context from (select id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key,
      limit_key, limit_wait_ms, cancel_requested, errors, o_result as result, created_at, started_at, at as finished_at, fair_key, trace_context
    from settled) f ),
    done as (select id, task, queue, case when refund then attempt - 1 else attempt end as attempt, state, kind, o_error as error from settled),
    -- (A data-modifying CTE runs to completion whether or not the result reads it. The exists is checked
    -- once: while no limit slot is taken, the done jobs are not looked up one by one.)
    freed as (update akadze.limit_slots s set job_id = null from done d where s.job_id = d.id
      and exists (select 1 from akadze.limit_slots t where t.job_id is not null))
    , start_req as (
      select j.id, j.limit_key, j.priority, j.run_at, j.started_at is not null as already, (j.cancel_requested or coalesce(j.expires_at <= now(), false)) as stop
      from akadze.jobs j
      where j.id in (select value::bigint from jsonb_array_elements_text($6::jsonb))
        and (select ids from settle_locked) is not null and j.state = 'running' and j.lease_owner = $7
    ) , start_stopped as (
      delete from akadze.jobs j using start_req r where j.id = r.id and r.stop and not r.already
      returning j.id, j.task, j.queue, j.args, 'cancelled'::text as state, j.priority, j.attempt - 1 as attempt, j.max_attempts, j.run_at,
        j.expires_at, j.unique_key, j.limit_key, j.limit_wait_ms, j.cancel_requested, j.errors, j.result, j.created_at, j.started_at,
        now() as finished_at, j.fair_key, j.trace_context
    ), "start_stopped_history" as (insert into akadze.job_history (id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key, limit_wait_ms, cancel_requested, errors, result, created_at, started_at, finished_at, fair_key, trace_context)
      select id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key, limit_wait_ms, cancel_requested, errors, result, created_at, started_at, finished_at, fair_key, trace_context from (select * from start_stopped) f ) , started as (
      update akadze.jobs j set started_at = now()
      from start_req r where j.id = r.id and not r.already and not r.stop
      returning j.id
    ) , akadze_seen as (
    update akadze.workers w set
      jobs_done = w.jobs_done + $8::int + (select count(*) from done d where d.kind <> 'release')::int,
      last_seen_at = greatest(w.last_seen_at, $9::timestamptz),
      stopped_at = case when $10::boolean then w.stopped_at else $11::timestamptz end
    where w.id = $12
    returning w.id)
    select json_build_object(
      'succeeded', coalesce((select json_agg(id) from done where state = 'succeeded'), '[]'::json),
      'done', '[]'::json,
      'start', json_build_object(
    'started', (select coalesce(json_agg(id), '[]'::json) from (select id from started union all select id from start_req where already) s),
    'stopped', coalesce((select json_agg(json_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt)) from start_stopped), '[]'::json), 'denied', '[]'::json,
    'slack', null::json)) as r
