import { sql, type SQL } from "drizzle-orm";
import type { HistoryPartitioning } from "../../core/retention.js";
import { msInterval } from "../time.js";

/** What one maintenance of the history did (`akadze.maintain_history`, made by migration 0007_job_history). */
export interface HistoryMaintenance {
  /** Partitions past the retention dropped whole. */
  dropped: number;
  /** Partitions made ahead of the clock. */
  created: number;
  /** Rows no partition could drop (the default partition's, or a plain table's) deleted one by one. */
  pruned: number;
  /** Why this role could not create or drop partitions (`must be owner of table ...`), or null. */
  denied: string | null;
  /** Rows of akadze.steps deleted because their workflow job is gone from every table. */
  stepsPruned?: number;
  /** Rows of akadze.replays deleted because their job is gone from every table. */
  replaysPruned?: number;
  /** Jobs whose progress and log lines were deleted because the job is gone from every table. */
  progressPruned?: number;
  /** Whether job_history is partitioned at all (a plain table from an app's own drizzle-kit migrations is not). */
  partitioned: boolean;
}

/**
 * One statement (so it runs over neon-http) that keeps the history within `keepMs` of `now`: drops the
 * partitions that ended before the horizon, makes partitions of the plan's width ahead, and deletes up to
 * `batch` old rows that sit outside any droppable partition. Returns a `HistoryMaintenance` as jsonb.
 */
export function maintainHistoryStatement(now: SQL, keepMs: number, plan: HistoryPartitioning, batch: number): SQL {
  // A dropped partition takes its workflow jobs with it but not their steps (no foreign key), so the steps of
  // jobs gone from every table go next (akadze.prune_orphan_steps, migration 0009), after the drops.
  // Likewise the child waits of children that ended outside a settle (cancelled while queued, recovered and
  // failed by a claim): the settle removes the others itself. The origins of replayed jobs gone from every table
  // go by a function too (akadze.prune_orphan_replays, migration 0014): a read of the history in this statement
  // itself would hold the partitions the maintenance drops. So do the progress and log lines of jobs gone
  // (akadze.prune_orphan_progress, migration 0015), looked for among the rows not written since the horizon.
  return sql`with waits_pruned as (
      delete from akadze.child_waits w where w.child_id in (
        select o.child_id from akadze.child_waits o where not exists (select 1 from akadze.jobs j where j.id = o.child_id) limit ${batch})
      returning 1
    )
    select akadze.maintain_history(${now}, ${keepMs}::float8, ${Math.round(plan.widthMs / 1000)}::bigint,
    ${Math.ceil(plan.aheadMs / 1000)}::bigint, ${batch}::int) || jsonb_build_object('stepsPruned', akadze.prune_orphan_steps(${batch}::int),
    'replaysPruned', akadze.prune_orphan_replays(${batch}::int),
    'progressPruned', akadze.prune_orphan_progress(${now} - ${msInterval(sql`${keepMs}`)}, ${batch}::int),
    'waitsPruned', (select count(*) from waits_pruned)) as r`;
}

/** Whether `maintainHistoryStatement` has work now, as a boolean expression for a claim's report. */
export function historyDue(now: SQL, keepMs: number, plan: HistoryPartitioning): SQL {
  return sql`akadze.history_due(${now}, ${keepMs}::float8, ${Math.round(plan.widthMs / 1000)}::bigint)`;
}
