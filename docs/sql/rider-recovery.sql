-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.
-- The recovery rider: what it adds to a claim (src/runtime/riders.ts); $n are bound per claim.
-- Before the core's CTEs:
recover_owners as (
      select o.owner from akadze.owners o where o.expires_at < now() and o.owner <> $1
        and exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = o.owner)
      order by o.expires_at limit $2 for update skip locked
    ),
recover_orphans as (
      with recursive leasing(owner) as (
        select (select j.lease_owner from akadze.jobs j where j.state = 'running' order by j.lease_owner limit 1)
        union all
        select (select j.lease_owner from akadze.jobs j where j.state = 'running' and j.lease_owner > l.owner order by j.lease_owner limit 1)
        from leasing l where l.owner is not null
      )
      select l.owner from leasing l where l.owner is not null and l.owner <> $1
        and not exists (select 1 from akadze.owners o where o.owner = l.owner)
      limit $2
    ),
recover_expired as (
      select id, started_at is not null as started, attempt >= max_attempts as last from akadze.jobs
      where state = 'running' and lease_owner <> $1
        and (lease_owner = any(array(select owner from recover_owners)) or lease_expires_at < now()
          or lease_expires_at is null and lease_owner = any(array(select owner from recover_orphans)))
        and (exists (select 1 from recover_owners) or exists (select 1 from recover_orphans) or (select j.lease_expires_at from akadze.jobs j where j.state = 'running' and j.lease_expires_at is not null
        and j.lease_expires_at < now() order by j.lease_expires_at limit 1) is not null)
      order by id limit $2 for update skip locked
    ),
recover_owners_ended as (
      delete from akadze.owners o where o.owner in (
          select e.owner from akadze.owners e where e.expires_at < now() and e.owner <> $1
          order by e.expires_at limit $2 for update skip locked)
        and not exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = o.owner
          and j.id not in (select id from recover_expired))
    ),
recover_requeued as (
      update akadze.jobs j set
        state = 'queued',
        attempt = case when x.started then j.attempt else j.attempt - 1 end,
        run_at = case when not x.started then j.run_at else now() + make_interval(secs => least($1, power(2, greatest(j.attempt, 1) - 1)) * (0.5 + random() * 0.5)) end,
        started_at = case when x.started then j.started_at end,
        lease_owner = null, lease_expires_at = null,
        errors = case when not x.started then j.errors else j.errors || jsonb_build_array(jsonb_build_object('attempt', j.attempt,
  'at', now(), 'kind', 'LeaseExpired', 'message', 'the invocation running this job stopped renewing its lease', 'stack', null)) end
      from recover_expired x
      where j.id = x.id and not (x.started and x.last)
      returning j.id, j.task, j.queue, j.attempt, j.state, case when x.started then json_build_object('kind', 'LeaseExpired', 'message', 'the invocation running this job stopped renewing its lease') end as error
    ),
recover_failed as (
      delete from akadze.jobs j using recover_expired x where j.id = x.id and x.started and x.last
      returning j.id, j.task, j.queue, j.args, 'failed'::text as state, j.priority, j.attempt, j.max_attempts, j.run_at, j.expires_at,
        j.unique_key, j.limit_key, j.limit_wait_ms, j.cancel_requested, j.errors || jsonb_build_array(jsonb_build_object('attempt', j.attempt,
  'at', now(), 'kind', 'LeaseExpired', 'message', 'the invocation running this job stopped renewing its lease', 'stack', null)) as errors, j.result, j.created_at,
        j.started_at, now() as finished_at, j.fair_key, j.trace_context, json_build_object('kind', 'LeaseExpired', 'message', 'the invocation running this job stopped renewing its lease') as error
    ),
"recover_failed_failed" as (insert into akadze.failed_jobs (id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key, limit_wait_ms, cancel_requested, errors, result, created_at, started_at, finished_at, fair_key, trace_context)
      select id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key, limit_wait_ms, cancel_requested, errors, result, created_at, started_at, finished_at, fair_key, trace_context from (select * from recover_failed) f ),
recovered as (
      select id, task, queue, attempt, state, error from recover_requeued
      union all select id, task, queue, attempt, state, error from recover_failed
    ),
recover_freed as (
      update akadze.limit_slots s set job_id = null from recovered r where s.job_id = r.id
    )
-- Reported in the answer:
'recovered', coalesce((select json_agg(json_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt,
        'from', 'running', 'to', state, 'error', error)) from "recovered" ), '[]'::json)
