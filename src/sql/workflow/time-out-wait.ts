import { sql, type SQL } from "drizzle-orm";

/**
 * Ends a job's event wait as timed out, only if no event reached it first (a concurrent `sendEvent` and
 * this statement take the step's row in turn: exactly one of them wins). Answers whether this one did.
 */
export function timeOutWaitStatement(jobId: number, name: string, at: SQL): SQL {
  return sql`
    with t as (update akadze.steps set state = 'timed_out', finished_at = ${at}
      where job_id = ${jobId} and name = ${name} and state = 'waiting' returning 1)
    select to_jsonb(exists (select 1 from t)) as r`;
}
