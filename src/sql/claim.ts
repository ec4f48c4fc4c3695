import { sql, type SQL } from "drizzle-orm";
import { notRateLimited, rateLimitedCtes, rateLimitedTransitions } from "./limit-wait.js";

/** How many expired leases one claim recovers at most; the rest wait for the next claim. */
export const RECOVER_LIMIT = 500;

export interface ClaimParams {
  owner: string;
  now: Date;
  leaseMs: number;
  batchSize: number;
  /** Task names this app can run; other jobs are left for apps that know them. */
  tasks: string[];
  /** Queues to claim from; `null` claims from every queue. */
  queues: string[] | null;
  /**
   * More work for the same round trip, as CTEs `name as (...)` (schedules, registry, retention).
   * They run in the same snapshot, so they must not touch the queued or running jobs the claim moves.
   */
  extra?: SQL[];
  /** Values the extra CTEs report, as `name: (select ... from some_cte)`; they appear under those names in the result. */
  report?: Record<string, SQL>;
}

/** A job handed to this invocation. */
export interface ClaimedJob {
  id: number;
  task: string;
  queue: string;
  args: unknown;
  attempt: number;
  max_attempts: number;
  priority: number;
}

/** A job whose state changed as a side effect of the claim. */
export interface SideTransition { id: number; task: string; queue: string; attempt: number; from: string; to: string }

export interface ClaimResult {
  claimed: ClaimedJob[];
  recovered: SideTransition[];
  cancelled: SideTransition[];
  /** Jobs held back by their limit past their `limitWait`, ended `rate_limited` by this claim. */
  rateLimited: SideTransition[];
  /** Jobs the schedules' extra CTEs enqueued in the same statement (see `report`). */
  scheduled?: number;
}

/** One queue is an equality, so the planner can walk jobs_claim_idx (queue first) in claim order. */
function queueCondition(queues: string[] | null): SQL {
  if (queues === null) return sql`true`;
  if (queues.length === 1) return sql`j.queue = ${queues[0]}`;
  return sql`j.queue in (select jsonb_array_elements_text(${JSON.stringify(queues)}::jsonb))`;
}

/** A number of milliseconds as an interval. */
export function msInterval(ms: SQL): SQL {
  return sql`(${ms})::float8 * interval '1 millisecond'`;
}

/** The default backoff curve in SQL, for jobs recovered from a dead invocation. */
export function defaultBackoffSql(attempt: SQL): SQL {
  return sql`make_interval(secs => least(300, power(2, greatest(${attempt}, 1) - 1)) * (0.5 + random() * 0.5))`;
}

/**
 * One atomic statement: recover expired leases (attempt spent, default backoff, `failed` on the last
 * attempt), cancel due jobs that were cancelled or expired, then claim a batch in priority order from
 * unpaused queues, taking a `maxRunning` slot and a `maxStarts` token per limited job. Limit slots and
 * tokens are rows taken with FOR UPDATE SKIP LOCKED, so concurrent claims never over-grant. Each limited
 * key offers only as many jobs as it may start, so it never crowds other jobs out of the batch.
 */
export function claimJobsStatement(p: ClaimParams): SQL {
  const now = sql`${p.now.toISOString()}::timestamptz`;
  const queueFilter = queueCondition(p.queues);
  const extra = (p.extra ?? []).map((cte) => sql`${cte},`);
  const reported = Object.entries(p.report ?? {}).map(([name, value]) => sql`${name}::text, ${value}`);
  const report = reported.length === 0 ? sql`` : sql` || jsonb_build_object(${sql.join(reported, sql`, `)})`;
  const stop = sql`(j.cancel_requested or coalesce(j.expires_at <= ${now}, false))`;
  const eligible = sql`j.state = 'queued'
        and (j.run_at <= ${now} or j.expires_at <= ${now} or j.cancel_requested)
        and j.task = any(array(select jsonb_array_elements_text(${JSON.stringify(p.tasks)}::jsonb)))
        and ${queueFilter}
        and j.queue not in (select name from akadze.queues where paused)`;
  return sql`
    with ${sql.join(extra, sql` `)} ${rateLimitedCtes({ eligible, stop, now })},
    recovered as (
      update akadze.jobs j set
        state = case when j.attempt >= j.max_attempts then 'failed' else 'queued' end,
        run_at = case when j.attempt >= j.max_attempts then j.run_at else ${now} + ${defaultBackoffSql(sql`j.attempt`)} end,
        finished_at = case when j.attempt >= j.max_attempts then ${now} end,
        lease_owner = null, lease_expires_at = null,
        errors = j.errors || jsonb_build_array(jsonb_build_object('attempt', j.attempt, 'at', ${now}, 'kind', 'LeaseExpired',
          'message', 'the invocation running this job stopped renewing its lease', 'stack', null))
      from (select id from akadze.jobs where state = 'running' and lease_expires_at < ${now}
            order by lease_expires_at limit ${RECOVER_LIMIT} for update skip locked) x
      where j.id = x.id
      returning j.id, j.task, j.queue, j.attempt, j.state
    ),
    freed as (
      update akadze.limit_slots s set job_id = null from recovered r where s.job_id = r.id returning s.key
    ),
    occupied as (
      select l.key, l.max_running - (select count(*) from akadze.limit_slots s where s.key = l.key and s.job_id is not null) as room
      from akadze.limits l where l.max_running is not null
    ),
    room as (
      -- How many more jobs each limited key may start, read from the snapshot. It only sizes the
      -- per-key candidate lists; the locked slots and tokens below decide what is granted.
      select l.key, least(${p.batchSize},
        coalesce((select o.room from occupied o where o.key = l.key), ${p.batchSize}),
        case when l.max_starts is null then ${p.batchSize}
             else (select count(*) from akadze.limit_tokens t where t.key = l.key
                     and (t.last_start is null or t.last_start <= ${now} - ${msInterval(sql`l.window_ms`)})) end) as n
      from akadze.limits l
    ),
    unlimited_candidates as (
      select j.id, j.limit_key, j.priority, j.run_at, ${stop} as stop
      from akadze.jobs j
      where ${eligible} and (j.limit_key is null or not exists (select 1 from akadze.limits l where l.key = j.limit_key))
      order by j.priority desc nulls last, j.run_at, j.id
      limit ${p.batchSize}
      for update of j skip locked
    ),
    limited_candidates as (
      -- Each limited key brings at most the jobs it has room for, so a key over its limit never
      -- fills the batch and holds back other keys or unlimited jobs.
      -- (The constant inner limit lets the planner walk jobs_limit_idx; the outer one stops it, and
      -- so the locking, after r.n rows.)
      select x.* from room r cross join lateral (
        select * from (
          select j.id, j.limit_key, j.priority, j.run_at, ${stop} as stop
          from akadze.jobs j
          where j.limit_key = r.key and ${eligible}
          order by j.priority desc nulls last, j.run_at, j.id
          -- (nulls last, as the index is declared: priority is never null, but only then the index gives the order)
          limit ${p.batchSize}
          for update of j skip locked
        ) y limit r.n
      ) x
      where r.n > 0
    ),
    candidates as (
      select * from (select * from unlimited_candidates union all select * from limited_candidates) c
      order by c.priority desc, c.run_at, c.id
      limit ${p.batchSize}
    ),
    due as (select * from candidates where not stop and ${notRateLimited(sql`candidates.id`)}),
    slot_room as (
      -- Only the first (maxRunning - occupied) free slots of a key may be taken. Slots outnumber
      -- maxRunning after a limit was lowered below the running count; this keeps the extra ones inert,
      -- and concurrent claims aim at the same first slots, so their row locks keep them apart.
      select s.key, s.slot from (
        select f.key, f.slot, row_number() over (partition by f.key order by f.slot) as rank
        from akadze.limit_slots f where f.key in (select limit_key from due) and f.job_id is null
      ) s join occupied o on o.key = s.key
      where s.rank <= o.room
    ),
    free_slots as (
      select s.key, s.slot, row_number() over (partition by s.key order by s.slot) as rn
      from (select key, slot from akadze.limit_slots
            where (key, slot) in (select key, slot from slot_room) and job_id is null for update skip locked) s
    ),
    free_tokens as (
      select t.key, t.slot, row_number() over (partition by t.key order by t.slot) as rn
      from (select t.key, t.slot from akadze.limit_tokens t join akadze.limits l on l.key = t.key
            where t.key in (select limit_key from due)
              and (t.last_start is null or t.last_start <= ${now} - ${msInterval(sql`l.window_ms`)})
            for update of t skip locked) t
    ),
    grants as (
      select l.key, least(
        case when l.max_running is null then 2147483647 else (select count(*) from free_slots f where f.key = l.key) end,
        case when l.max_starts is null then 2147483647 else (select count(*) from free_tokens f where f.key = l.key) end) as n
      from akadze.limits l where l.key in (select limit_key from due)
    ),
    ranked as (
      select d.id, d.limit_key, row_number() over (partition by d.limit_key order by d.priority desc, d.run_at, d.id) as rn
      from due d
    ),
    chosen as (
      select r.id, r.limit_key, r.rn from ranked r left join grants g on g.key = r.limit_key
      where r.limit_key is null or g.key is null or r.rn <= g.n
    ),
    took_slots as (
      update akadze.limit_slots s set job_id = c.id
      from chosen c join free_slots f on f.key = c.limit_key and f.rn = c.rn
      where s.key = f.key and s.slot = f.slot
      returning s.key
    ),
    took_tokens as (
      update akadze.limit_tokens t set last_start = ${now}
      from chosen c join free_tokens f on f.key = c.limit_key and f.rn = c.rn
      where t.key = f.key and t.slot = f.slot
      returning t.key
    ),
    claimed as (
      update akadze.jobs j set state = 'running', attempt = j.attempt + 1, lease_owner = ${p.owner},
        lease_expires_at = ${now} + ${msInterval(sql`${p.leaseMs}`)}, started_at = ${now}
      from chosen c where j.id = c.id
      returning j.id, j.task, j.queue, j.args, j.attempt, j.max_attempts, j.priority, j.run_at
    ),
    cancelled as (
      update akadze.jobs j set state = 'cancelled', finished_at = ${now}
      from candidates c where j.id = c.id and c.stop
      returning j.id, j.task, j.queue, j.attempt
    )
    select jsonb_build_object(
      'claimed', coalesce((select jsonb_agg(jsonb_build_object('id', id, 'task', task, 'queue', queue, 'args', args,
        'attempt', attempt, 'max_attempts', max_attempts, 'priority', priority) order by priority desc, run_at, id) from claimed), '[]'::jsonb),
      'recovered', coalesce((select jsonb_agg(jsonb_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt,
        'from', 'running', 'to', state)) from recovered), '[]'::jsonb),
      'cancelled', coalesce((select jsonb_agg(jsonb_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt,
        'from', 'queued', 'to', 'cancelled')) from cancelled), '[]'::jsonb),
      'rateLimited', ${rateLimitedTransitions()},
      'slots', (select count(*) from took_slots) + (select count(*) from took_tokens) + (select count(*) from freed)
    )${report} as r`;
}
