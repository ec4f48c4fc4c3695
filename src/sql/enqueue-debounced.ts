import { sql, type SQL } from "drizzle-orm";
import { msInterval, timestamp } from "./time.js";
import type { TraceCarrier } from "../core/tracing.js";

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
 */
export function enqueueDebouncedStatement(e: DebouncedEnqueue, payload: unknown): SQL {
  const now = timestamp(e.now);
  const cap = e.maxWaitMs === null ? sql`` : sql`, j.created_at + ${msInterval(sql`${e.maxWaitMs}`)}`;
  // (A later payload leaves the trace context as it is: the run links to where its job began.)
  const traced = e.traceContext === null ? null : JSON.stringify(e.traceContext);
  return sql`
    with upserted as (
      insert into akadze.jobs as j (task, queue, args, priority, max_attempts, run_at, created_at, debounce_key${traced === null ? sql`` : sql`, trace_context`})
      values (${e.task}::text, ${e.queue}::text, jsonb_build_array(${JSON.stringify(payload)}::jsonb), ${e.priority}::smallint,
        ${e.maxAttempts}::int, ${now} + ${msInterval(sql`${e.windowMs}`)}, ${now}, ${e.key}::text${traced === null ? sql`` : sql`, ${traced}::jsonb`})
      on conflict (task, debounce_key) where state = 'queued' and debounce_key is not null
      do update set args = j.args || excluded.args, run_at = least(excluded.run_at ${cap})
      returning id
    )
    -- No notify: the job is not due before its window ends, so waking workers now would find nothing.
    select (select id from upserted) as r`;
}
