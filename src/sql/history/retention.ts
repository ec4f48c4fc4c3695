import { sql, type SQL } from "drizzle-orm";
import type { RetentionPlan } from "../../core/retention.js";
import { deleteFinishedJobsCte } from "./delete-finished-jobs.js";
import { msBefore } from "../time.js";

/** How long after a leading debounce's window closed its row may go. */
const CLOSED_WINDOW_GRACE_MS = 60_000;

/**
 * The row-by-row retention work of one invocation as CTEs for the claim's round trip (the retention rider, runtime/riders.ts):
 * failed jobs past their own horizon, long-gone registry rows, event ids older than the finished jobs' horizon
 * and closed debounce windows, each in a bounded batch. They never touch
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
  // An event id is remembered as long as finished jobs are (app.sendEvent): a repeat within that starts nothing.
  ctes.push(sql`akadze_pruned_events as (
    delete from akadze.sent_events where (name, id) in (
      select name, id from akadze.sent_events where sent_at < ${msBefore(now, plan.finishedMs)}
      limit ${plan.batch} for update skip locked)
    returning id)`);
  // A leading debounce's closed window means what no row means. A minute past its close, so a host whose clock
  // runs ahead of the writers' never deletes a window still open; the lock re-reads a row an enqueue just moved.
  ctes.push(sql`akadze_pruned_windows as (
    delete from akadze.debounce_windows where (task, key) in (
      select task, key from akadze.debounce_windows where quiet_at < ${msBefore(now, CLOSED_WINDOW_GRACE_MS)}
      limit ${plan.batch} for update skip locked)
    returning key)`);
  return ctes;
}
