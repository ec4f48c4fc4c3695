import { sql, type SQL } from "drizzle-orm";
import type { RetentionPlan } from "../core/retention.js";
import { deleteFinishedJobsCte } from "./delete-finished-jobs.js";
import { msBefore } from "./time.js";

/**
 * The row-by-row retention work of one invocation as CTEs for the claim's round trip (`ClaimParams.extra`):
 * failed jobs past their own horizon and long-gone registry rows, each in a bounded batch. They never touch
 * queued or running jobs, which is what the claim moves. The history is pruned by `maintainHistoryStatement`
 * (whole partitions, one statement beside the claims).
 */
export function retentionCtes(plan: RetentionPlan, now: Date): SQL[] {
  const ctes: SQL[] = [];
  if (plan.failedMs !== null) ctes.push(deleteFinishedJobsCte("akadze_pruned_failed", ["failed"], msBefore(now, plan.failedMs), plan.batch));
  ctes.push(sql`akadze_pruned_workers as (
    delete from akadze.workers where id in (
      select id from akadze.workers where last_seen_at < ${msBefore(now, plan.workersMs)}
      limit ${plan.batch} for update skip locked)
    returning id)`);
  return ctes;
}
