import { sql, type SQL } from "drizzle-orm";

/** One row to insert into akadze.jobs. */
export interface NewJob {
  task: string;
  queue: string;
  args: unknown;
  priority: number;
  maxAttempts: number;
  runAt: Date;
  expiresAt: Date | null;
  uniqueKey: string | null;
  limitKey: string | null;
}

/** Inserts many jobs in one statement (`jsonb_to_recordset`), returning their ids in order. */
export function insertJobsStatement(rows: NewJob[]): SQL {
  const payload = JSON.stringify(rows.map((row, ord) => ({
    ord,
    task: row.task,
    queue: row.queue,
    args: row.args,
    priority: row.priority,
    max_attempts: row.maxAttempts,
    run_at: row.runAt.toISOString(),
    expires_at: row.expiresAt?.toISOString() ?? null,
    unique_key: row.uniqueKey,
    limit_key: row.limitKey,
  })));
  return sql`
    with inserted as (
      insert into akadze.jobs (task, queue, args, priority, max_attempts, run_at, expires_at, unique_key, limit_key, created_at)
      select x.task, x.queue, x.args, x.priority, x.max_attempts, x.run_at, x.expires_at, x.unique_key, x.limit_key, now()
      from jsonb_to_recordset(${payload}::jsonb) as x(ord int, task text, queue text, args jsonb, priority smallint,
        max_attempts int, run_at timestamptz, expires_at timestamptz, unique_key text, limit_key text)
      order by x.ord
      returning id
    )
    select coalesce(jsonb_agg(id order by id), '[]'::jsonb) as r from inserted`;
}
