import { sql, type SQL } from "drizzle-orm";

/** The columns a finished job keeps, in the order `akadze.job_history` and `akadze.failed_jobs` declare them. */
export const FINISHED_COLUMN_NAMES =
  "id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key, limit_wait_ms, cancel_requested, errors, result, created_at, started_at, finished_at, fair_key, trace_context";
const FINISHED_COLUMNS = sql.raw(FINISHED_COLUMN_NAMES);

/** Where finished rows of a statement go: by their state, or (when the statement knows it) only one of the two tables. */
export type ArchiveTarget = "history" | "failed" | "by-state";

/**
 * CTEs `<name>_history` and/or `<name>_failed` that insert the finished jobs `rows` selects (`FINISHED_COLUMNS`,
 * usually read from a `delete from akadze.jobs ... returning` CTE of the same statement) where they live from
 * now on: failed jobs into the dead letters, the others into the history. `keepSucceeded: false` keeps no
 * row of a succeeded job (it is only deleted).
 */
export function archiveCtes(name: string, rows: SQL, target: ArchiveTarget, keepSucceeded = true): SQL[] {
  const ctes: SQL[] = [];
  const history = keepSucceeded ? sql`f.state <> 'failed'` : sql`f.state not in ('failed', 'succeeded')`;
  if (target !== "failed") {
    ctes.push(sql`${sql.identifier(`${name}_history`)} as (insert into akadze.job_history (${FINISHED_COLUMNS})
      select ${FINISHED_COLUMNS} from (${rows}) f ${target === "by-state" || !keepSucceeded ? sql`where ${history}` : sql``})`);
  }
  if (target !== "history") {
    ctes.push(sql`${sql.identifier(`${name}_failed`)} as (insert into akadze.failed_jobs (${FINISHED_COLUMNS})
      select ${FINISHED_COLUMNS} from (${rows}) f ${target === "by-state" ? sql`where f.state = 'failed'` : sql``})`);
  }
  return ctes;
}
