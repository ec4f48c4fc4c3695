import { sql, type SQL } from "drizzle-orm";
import { JOBS_CHANNEL } from "./enqueue.js";
import { msInterval, timestamp } from "../time.js";
import type { TraceCarrier } from "../../core/tracing.js";

/** A debounced enqueue: one payload for the queued job of `task` under `key`. */
export interface DebouncedEnqueue {
  task: string;
  queue: string;
  priority: number;
  maxAttempts: number;
  key: string;
  /** The job runs this long after the latest payload... */
  windowMs: number;
  /** ...but no later than this long after its first one (null: no bound). */
  maxWaitMs: number | null;
  /** Leading edge: an enqueue that finds the key quiet (no enqueue within the window) makes a job due at once. */
  leading: boolean;
  /** The limit key every job of this enqueue carries (null: none), and how long its limit may hold it back. */
  limitKey: string | null;
  limitWaitMs: number | null;
  /** A test clock's now, or null: the database's. */
  now: Date | null;
  /** Where this payload was enqueued (null: untraced): the job keeps its first payload's. */
  traceContext: TraceCarrier | null;
}

/**
 * Adds `payload` to the queued job of the task under the key, or inserts that job: one statement, so it
 * works inside the caller's transaction and in a neon-http `db.batch`. Concurrent enqueues under one key
 * meet on the unique index (one waits for the other's commit, then appends to the same row, or, once a claim
 * took it, makes the next job); a rolled-back enqueue leaves nothing. Each payload pushes the run time to
 * `windowMs` after it, capped at `maxWaitMs` after the job's first payload. Returns the job's id.
 *
 * With `leading`, the key's row in akadze.debounce_windows decides first: an enqueue at or after its quiet time
 * (or with no row) makes a job of its own payload, due now, and the enqueues before the quiet time go to the
 * trailing job as above. Every enqueue moves the quiet time to a window after itself. Concurrent enqueues of a
 * key meet on that row first, so exactly one of them finds the key quiet.
 */
export function enqueueDebouncedStatement(e: DebouncedEnqueue, payload: unknown): SQL {
  const now = timestamp(e.now);
  const windowSql = msInterval(sql`${e.windowMs}`);
  const cap = e.maxWaitMs === null ? sql`` : sql`, j.created_at + ${msInterval(sql`${e.maxWaitMs}`)}`;
  const columns = sql`${e.task}::text, ${e.queue}::text, jsonb_build_array(${JSON.stringify(payload)}::jsonb), ${e.priority}::smallint,
        ${e.maxAttempts}::int`;
  const keys = sql`${e.limitKey}::text, ${e.limitWaitMs}::bigint`;
  // (A later payload leaves the trace context as it is: the run links to where its job began.)
  const traced = e.traceContext === null ? null : JSON.stringify(e.traceContext);
  const traceColumn = traced === null ? sql`` : sql`, trace_context`;
  const traceValue = traced === null ? sql`` : sql`, ${traced}::jsonb`;
  const trailing = (from: SQL) => sql`insert into akadze.jobs as j (task, queue, args, priority, max_attempts, run_at, created_at, debounce_key, limit_key, limit_wait_ms${traceColumn})
      select ${columns}, ${now} + ${windowSql}, ${now}, ${e.key}::text, ${keys}${traceValue} ${from}
      on conflict (task, debounce_key) where state = 'queued' and debounce_key is not null
      do update set args = j.args || excluded.args, run_at = least(excluded.run_at ${cap})
      returning id`;
  if (!e.leading) {
    return sql`
    with upserted as (
      ${trailing(sql``)}
    )
    -- No notify: the job is not due before its window ends, so waking workers now would find nothing.
    select (select id from upserted) as r`;
  }
  return sql`
    with win as (
      insert into akadze.debounce_windows as w (task, key, quiet_at, enqueues)
      values (${e.task}::text, ${e.key}::text, ${now} + ${windowSql}, 1)
      on conflict (task, key) do update
        set enqueues = case when w.quiet_at <= ${now} then 1 else w.enqueues + 1 end, quiet_at = excluded.quiet_at
      returning enqueues
    ),
    -- The key was quiet: this payload runs at once, in a job no later enqueue joins.
    leading_job as (
      insert into akadze.jobs (task, queue, args, priority, max_attempts, run_at, created_at, limit_key, limit_wait_ms${traceColumn})
      select ${columns}, ${now}, ${now}, ${keys}${traceValue} from win where win.enqueues = 1
      returning id, queue
    ),
    trailing_job as (
      ${trailing(sql`from win where win.enqueues > 1`)}
    ),
    -- Only the leading job is due now; the trailing one waits out its window.
    notified as (select pg_notify(${JOBS_CHANNEL}, l.queue) from leading_job l)
    select coalesce((select id from leading_job), (select id from trailing_job)) as r, (select count(*) from notified) as notified`;
}
