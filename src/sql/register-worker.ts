import { sql, type SQL } from "drizzle-orm";
import { timestamp } from "./time.js";

/** A serverless invocation (one `runOnce`) or a long-lived worker process (`runWorker`). */
export type WorkerKind = "invocation" | "worker";

/** Upserts one registry row as seen (and, if new, started) at `now`; a row seen again is live again. */
function upsertWorker(id: string, kind: WorkerKind, queues: string[] | null, now: Date): SQL {
  return sql`insert into akadze.workers as w (id, kind, queues, started_at, last_seen_at)
    values (${id}, ${kind}, ${JSON.stringify(queues ?? [])}::jsonb, ${timestamp(now)}, ${timestamp(now)})
    on conflict (id) do update set last_seen_at = greatest(w.last_seen_at, excluded.last_seen_at), stopped_at = null,
      queues = excluded.queues`;
}

/** The upsert as a CTE for the claim's round trip: the invocation records itself as it claims. */
export function invocationSeenCte(id: string, queues: string[] | null, now: Date): SQL {
  return sql`akadze_seen as (${upsertWorker(id, "invocation", queues, now)} returning w.id)`;
}

/** The upsert on its own, when a long-lived worker starts. */
export function workerStartedStatement(id: string, queues: string[] | null, now: Date): SQL {
  return sql`${upsertWorker(id, "worker", queues, now)} returning to_jsonb(w.id) as r`;
}
