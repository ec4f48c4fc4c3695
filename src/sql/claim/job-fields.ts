import { sql } from "drizzle-orm";

/** A job's listing fields as `jsonb_build_object` arguments, shared by `listJobsStatement` and `getJobStatement`. */
export const JOB_SUMMARY_FIELDS = sql`'id', id, 'task', task, 'queue', queue, 'state', state, 'attempt', attempt, 'maxAttempts', max_attempts,
  'priority', priority, 'runAt', run_at, 'createdAt', created_at, 'finishedAt', finished_at`;
