import { sql, type SQL } from "drizzle-orm";
import type { FinishedState } from "../../core/states.js";
import { deleteFinishedJobsCte } from "./delete-finished-jobs.js";

/**
 * Deletes up to `batch` jobs in `states` that finished before `cutoff`, with their progress and log lines; returns
 * how many jobs, as a jsonb number. (The claim's own pruning of failed jobs leaves those to the history's
 * maintenance, `akadze.prune_orphan_progress`, so that a claim costs what it did when no job reports anything.)
 */
export function pruneJobsStatement(states: readonly FinishedState[], cutoff: SQL, batch: number): SQL {
  return sql`with ${deleteFinishedJobsCte("pruned", states, cutoff, batch)},
    pruned_logs as (delete from akadze.job_logs where job_id in (select id from pruned)),
    pruned_progress as (delete from akadze.job_progress where job_id in (select id from pruned))
    select to_jsonb((select count(*) from pruned)) as r`;
}
