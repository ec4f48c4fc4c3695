import { sql, type SQL } from "drizzle-orm";
import type { FinishedState } from "../core/states.js";
import { deleteFinishedJobsCte } from "./delete-finished-jobs.js";

/** Deletes up to `batch` jobs in `states` that finished before `cutoff`; returns how many, as a jsonb number. */
export function pruneJobsStatement(states: readonly FinishedState[], cutoff: SQL, batch: number): SQL {
  return sql`with ${deleteFinishedJobsCte("pruned", states, cutoff, batch)}
    select to_jsonb((select count(*) from pruned)) as r`;
}
