import { sql, type SQL } from "drizzle-orm";
import { FINISHED_STATES } from "../../core/states.js";
import { JOBS_CHANNEL } from "../enqueue/enqueue.js";
import { selectionWhere, type JobSelectionSql } from "../reads/job-selection.js";
import { freeOfKeyClashCte } from "./requeue-jobs.js";

/** Which finished jobs a replay statement takes: one by id (optionally with new args for it), or a selection. */
export type ReplaySource = { id: number; args?: unknown } | { selection: JobSelectionSql };

/**
 * Enqueues each finished job the source takes (succeeded, failed, cancelled or rate_limited; from the history
 * or the dead letters; at most the selection's limit, oldest first) again as a new job: same task, queue,
 * args (or the new ones), priority, max_attempts and keys, due at `at`, no expiry; `akadze.replays` records
 * which job each replays. The finished job stays as it was. A job whose unique key an active job holds is not
 * replayed, nor all but the newest of several sharing a key. Returns `{ count, ids, clash }`: the new ids in
 * the order of their origins, and the key that stopped a replay by id. `dryRun` counts and changes nothing.
 */
export function replayJobsStatement(source: ReplaySource, at: SQL, dryRun: boolean): SQL {
  const finished = sql.raw(FINISHED_STATES.map((s) => `'${s}'`).join(", "));
  const where = "id" in source ? sql`f.id = ${source.id} and f.state in (${finished})` : selectionWhere(source.selection, "f");
  const limit = "id" in source ? 1 : source.selection.limit;
  const args = "id" in source && source.args !== undefined ? sql`${JSON.stringify(source.args)}::jsonb` : sql`p.args`;
  const ctes = sql`picked as (
      select f.id, f.task, f.queue, f.args, f.priority, f.max_attempts, f.unique_key, f.limit_key, f.limit_wait_ms, f.fair_key
      from akadze.all_jobs f where ${where} order by f.id limit ${limit}
    ), ${freeOfKeyClashCte("eligible", "picked")}`;
  const clash = sql`(select unique_key from picked where id not in (select id from eligible) limit 1)`;
  if (dryRun) return sql`with ${ctes} select jsonb_build_object('count', (select count(*) from eligible), 'ids', '[]'::jsonb, 'clash', ${clash}) as r`;
  return sql`
    with ${ctes},
    -- The new ids are drawn first, so each new job can be recorded with the job it replays.
    planned as (
      select p.*, nextval(pg_get_serial_sequence('akadze.jobs', 'id')) as new_id from picked p where p.id in (select id from eligible)
    ),
    inserted as (
      -- least(): due at once even when the caller's clock lags the database's
      insert into akadze.jobs (id, task, queue, args, priority, max_attempts, run_at, unique_key, limit_key, limit_wait_ms, fair_key, created_at)
        overriding system value
      select p.new_id, p.task, p.queue, ${args}, p.priority, p.max_attempts, least(now(), ${at}), p.unique_key, p.limit_key, p.limit_wait_ms,
        p.fair_key, now()
      from planned p
      returning id, queue
    ),
    origins as (insert into akadze.replays (job_id, replay_of) select new_id, id from planned),
    -- Wakes listening workers when it commits, as an enqueue does.
    notified as (select pg_notify(${JOBS_CHANNEL}, q.queue) from (select distinct queue from inserted) q)
    select jsonb_build_object('count', (select count(*) from inserted), 'ids', (select coalesce(jsonb_agg(new_id order by id), '[]'::jsonb) from planned),
      'clash', ${clash}, 'notified', (select count(*) from notified)) as r`;
}
