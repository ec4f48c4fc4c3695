import { sql, type SQL } from "drizzle-orm";
import { timestamp } from "../time.js";
import { cte } from "../claim/cte-names.js";

/** A serverless invocation (one `runOnce`) or a long-lived worker process (`runWorker`). */
export type WorkerKind = "invocation" | "worker";

/** The registry row's columns, as an upsert's target list. */
const COLUMNS = sql`(id, kind, queues, started_at, last_seen_at)`;

/** A row seen again is live again, and seen no earlier than before. */
const SEEN_AGAIN = sql`on conflict (id) do update set last_seen_at = greatest(w.last_seen_at, excluded.last_seen_at), stopped_at = null,
      queues = excluded.queues`;

/**
 * The upsert as a CTE for a claim's round trip: the invocation records itself as it claims, once that claim
 * took a job (it reads the claim's `claimed` CTE, so the registry rider puts it after the core, runtime/riders.ts). An invocation
 * that claims nothing leaves no row: idle cron ticks would otherwise fill the registry with empty ones.
 */
export function invocationSeenCte(id: string, queues: string[] | null, startedAt: Date, now: Date): SQL {
  return sql`${cte("registrySeen")} as (
    insert into akadze.workers as w ${COLUMNS}
    select ${id}, 'invocation', ${JSON.stringify(queues ?? [])}::jsonb, ${timestamp(startedAt)}, ${timestamp(now)}
    where exists (select 1 from ${cte("claimed")})
    ${SEEN_AGAIN}
    returning w.id)`;
}

/** The upsert on its own, when a long-lived worker starts. */
export function workerStartedStatement(id: string, queues: string[] | null, now: Date): SQL {
  return sql`insert into akadze.workers as w ${COLUMNS}
    values (${id}, 'worker', ${JSON.stringify(queues ?? [])}::jsonb, ${timestamp(now)}, ${timestamp(now)})
    ${SEEN_AGAIN}
    returning to_jsonb(w.id) as r`;
}
