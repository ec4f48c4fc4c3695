import { sql } from "drizzle-orm";

/** What a control statement changed: the job, and its state after the change. */
export interface ChangedJob { id: number; task: string; queue: string; state: string; attempt: number }

/** The `ChangedJob` of a row the statement returned (`returning *`). */
export const CHANGED_JOB = sql`jsonb_build_object('id', id, 'task', task, 'queue', queue, 'state', state, 'attempt', attempt)`;
