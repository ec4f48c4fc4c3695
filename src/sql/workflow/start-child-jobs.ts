import { sql, type SQL } from "drizzle-orm";
import { LEASE_LOST_CODE, LEASE_LOST_PREFIX } from "../settle/complete-owned.js";
import { insertedJobsCte, JOBS_CHANNEL, type JobBatch } from "../enqueue/enqueue.js";

/**
 * A workflow's child jobs and the step that waits for them, in one statement: the children are enqueued
 * exactly when the step is stored, and only while `owner` holds the parent's lease (otherwise it raises and
 * nothing is inserted). Answers the children's ids in order.
 */
export function startChildJobsStatement(owner: string, parentId: number, at: SQL, step: { name: string; seq: number; wakeAt: Date },
  batch: JobBatch, args: unknown[]): SQL {
  return sql`
    with owned as (select id from akadze.jobs where id = ${parentId} and state = 'running' and lease_owner = ${owner} for share),
    ${insertedJobsCte(batch, args)},
    notified as (select pg_notify(${JOBS_CHANNEL}, ${batch.queue}::text) where exists (select 1 from inserted)),
    -- The settle that ends the last of them wakes the parent (settle.ts, wakeParentsCtes).
    waits as (insert into akadze.child_waits (child_id, parent_id) select id, ${parentId} from inserted where exists (select 1 from owned)),
    saved as (
      insert into akadze.steps (job_id, name, seq, kind, state, result, attempts, wake_at, created_at)
      select id, ${step.name}, ${step.seq}, 'jobs', 'waiting', (select coalesce(jsonb_agg(id order by id), '[]'::jsonb) from inserted), 1,
        ${step.wakeAt.toISOString()}::timestamptz, ${at}
      from owned
      returning 1
    )
    select case when exists (select 1 from saved) and (select count(*) from notified) >= 0
      then (select coalesce(jsonb_agg(id order by id), '[]'::jsonb) from inserted)
      else to_jsonb(akadze.raise_error(${LEASE_LOST_PREFIX + parentId}, ${LEASE_LOST_CODE})) end as r`;
}
