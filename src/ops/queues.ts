import { queryJson, type Db } from "../db/query.js";
import { listQueuesStatement } from "../sql/reads/list-queues.js";
import { timestamp } from "../sql/time.js";

/** One queue as `queues list` shows it: every queue that has jobs or was ever paused. */
export interface QueueRow {
  queue: string;
  paused: boolean;
  /** Queued and due now. */
  due: number;
  /** Queued for later (delay, backoff, snooze). */
  scheduled: number;
  /** Running: started by a worker or invocation (their handlers run now). */
  running: number;
  /** Claimed by a worker or invocation but not started yet (held in its local queue, a prefetch). */
  claimed: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  /** Ended `rate_limited`: held back by their limit past their `limitWait`. */
  rateLimited: number;
  /** Seconds the longest-waiting due job has waited since its run_at; 0 when none is due. */
  oldestDueSeconds: number;
  /**
   * Whether `succeeded`, `cancelled` and `rateLimited` are estimates: past HISTORY_COUNT_ROWS finished jobs
   * kept, they are counted from a sample of the history, not row by row. The other counts are always exact.
   */
  estimated: boolean;
}

/**
 * Every queue with its job counts by state, whether it is paused, and how long its oldest due job waited (at
 * `now`, default the database's clock).
 * @example for (const q of await listQueues(db)) if (q.oldestDueSeconds > 60) alert(q.queue);
 */
export async function listQueues(db: Db, options: { now?: Date } = {}): Promise<QueueRow[]> {
  const rows = await queryJson<QueueRow[] | null>(db, listQueuesStatement(timestamp(options.now)));
  return (rows ?? []).map((q) => ({
    queue: q.queue, paused: q.paused, due: q.due, scheduled: q.scheduled, running: q.running, claimed: q.claimed, succeeded: q.succeeded,
    failed: q.failed, cancelled: q.cancelled, rateLimited: q.rateLimited, oldestDueSeconds: Number(q.oldestDueSeconds),
    estimated: q.estimated,
  }));
}
