import { sql, type SQL } from "drizzle-orm";
import { timestamp } from "./time.js";

/**
 * Stores the value a body returned after completeTx/completeBatch already marked its job `succeeded`.
 * Only the completion this run made matches (state and the exact `finished_at` it wrote), so a value
 * never lands on a job that has moved on (retention pruned it, or it is not the same completion).
 */
export function keepResultStatement(jobId: number, completedAt: Date, result: unknown): SQL {
  return sql`
    update akadze.jobs set result = ${JSON.stringify(result)}::jsonb
    where id = ${jobId} and state = 'succeeded' and finished_at = ${timestamp(completedAt)}`;
}
