import { sql, type SQL } from "drizzle-orm";
import { timestamp } from "../time.js";

/**
 * Stores the value a body returned after completeTx/completeBatch already marked its job `succeeded` (and
 * moved it to the history). Only the completion this run made matches (the exact `finished_at` it wrote,
 * which also picks the one partition to look in), so a value never lands on a job that has moved on
 * (retention dropped it, or it is not the same completion).
 */
export function keepResultStatement(jobId: number, completedAt: Date, result: unknown): SQL {
  return sql`
    update akadze.job_history set result = ${JSON.stringify(result)}::jsonb
    where id = ${jobId} and state = 'succeeded' and finished_at = ${timestamp(completedAt)}`;
}
