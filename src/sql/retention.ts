import { sql, type SQL } from "drizzle-orm";
import { PRUNED_BY_DEFAULT, type RetentionPlan } from "../core/retention.js";
import { deleteFinishedJobsCte } from "./delete-finished-jobs.js";
import { msBefore } from "./time.js";

/**
 * The retention work of one invocation as CTEs for the claim's round trip (`ClaimParams.extra`): old
 * finished jobs and long-gone registry rows, each in a bounded batch. They never touch queued or running
 * jobs, which is what the claim moves.
 */
export function retentionCtes(plan: RetentionPlan, now: Date): SQL[] {
  const ctes = [deleteFinishedJobsCte("akadze_pruned_jobs", PRUNED_BY_DEFAULT, msBefore(now, plan.finishedMs), plan.batch)];
  if (plan.failedMs !== null) ctes.push(deleteFinishedJobsCte("akadze_pruned_failed", ["failed"], msBefore(now, plan.failedMs), plan.batch));
  ctes.push(sql`akadze_pruned_workers as (
    delete from akadze.workers where id in (
      select id from akadze.workers where last_seen_at < ${msBefore(now, plan.workersMs)}
      limit ${plan.batch} for update skip locked)
    returning id)`);
  return ctes;
}
