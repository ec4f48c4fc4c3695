import { sql, type SQL } from "drizzle-orm";
import { msInterval, timestamp } from "../time.js";
import type { TraceCarrier } from "../../core/tracing.js";
import { fairTurnsOf } from "../claim/fair-turns.js";

/** The channel enqueues notify (in their own transaction), so listening workers wake at once. */
export const JOBS_CHANNEL = "akadze_jobs";

/** The columns every job of one enqueue call shares. */
export interface JobBatch {
  task: string;
  queue: string;
  priority: number;
  maxAttempts: number;
  /** When the jobs are due; null: `delayMs` after the database's `now()`. */
  runAt: Date | null;
  delayMs: number;
  expiresAt: Date | null;
  uniqueKey: string | null;
  limitKey: string | null;
  /** How long a due job may be held back by its limit before it ends `rate_limited`; null: no bound. */
  limitWaitMs: number | null;
  /** The fairness key claims share their batches across; null: none. */
  fairKey: string | null;
  /** The enqueuing code's trace context (the app traces and a span is active), stored with every job; null: none. */
  traceContext: TraceCarrier | null;
}

/**
 * Inserts one job per args in one statement, returning their ids in order. The shared columns are sent
 * once and only the args per job, so a large enqueueMany costs little more than its args.
 */
export function insertJobsStatement(batch: JobBatch, args: unknown[], computed?: SQL): SQL {
  return sql`
    with ${insertedJobsCte(batch, args, computed)},
    -- Wakes listening workers when the enqueue commits (never before, never if it rolls back).
    notified as (select pg_notify(${JOBS_CHANNEL}, ${batch.queue}::text) where exists (select 1 from inserted))
    select coalesce(json_agg(id order by id), '[]'::json) as r, (select count(*) from notified) as notified from inserted`;
}

/**
 * The CTE `inserted (id)` that inserts one job per args, for statements that enqueue as part of more (a workflow's
 * child jobs). `computed`: a jsonb object the database evaluates, merged into every args (`enqueueQuery`'s sqlArgs).
 */
export function insertedJobsCte(batch: JobBatch, args: unknown[], computed?: SQL): SQL {
  // (Only a traced enqueue names the trace context: an untraced one sends the statement it always sent.)
  const traced = batch.traceContext === null ? null : JSON.stringify(batch.traceContext);
  return sql`inserted as (
      insert into akadze.jobs (task, queue, args, priority, max_attempts, run_at, expires_at, unique_key, limit_key, limit_wait_ms, fair_key, fair_tag, created_at${traced === null ? sql`` : sql`, trace_context`})
      select ${batch.task}::text, ${batch.queue}::text, ${computed ? sql`a.args || ${computed}` : sql`a.args`}, ${batch.priority}::smallint, ${batch.maxAttempts}::int,
        -- expires_at is not timestamp(): no expiry must stay null, where timestamp(null) means now().
        ${batch.runAt !== null ? timestamp(batch.runAt) : batch.delayMs === 0 ? sql`now()` : sql`now() + ${msInterval(sql`${batch.delayMs}`)}`}, ${batch.expiresAt?.toISOString() ?? null}::timestamptz,
        ${batch.uniqueKey}::text, ${batch.limitKey}::text, ${batch.limitWaitMs}::bigint, ${batch.fairKey}::text,
        ${fairTurn(batch)}, now()${traced === null ? sql`` : sql`, ${traced}::jsonb`}
      from jsonb_array_elements(${JSON.stringify(args)}::jsonb) with ordinality as a(args, ord)
      order by a.ord
      returning id
    )`;
}

/**
 * A keyed job's turn (fair-turns.ts), when it is due as it is queued; a job not due yet is parked (no turn) and takes
 * its turn when a claim finds it due.
 */
function fairTurn(batch: JobBatch): SQL {
  if (batch.fairKey === null || (batch.runAt === null && batch.delayMs > 0)) return sql`null::float8`;
  const turns = fairTurnsOf(sql`${batch.fairKey}::text`, sql`a.ord`);
  return batch.runAt === null ? turns : sql`case when ${timestamp(batch.runAt)} <= now() then ${turns} end`;
}
