import { sql, type SQL } from "drizzle-orm";

/** Pauses or resumes a queue for every invocation. */
export function setQueuePausedStatement(queue: string, paused: boolean): SQL {
  return sql`
    insert into akadze.queues (name, paused, updated_at) values (${queue}, ${paused}, now())
    on conflict (name) do update set paused = excluded.paused, updated_at = excluded.updated_at
    returning to_jsonb(paused) as r`;
}
