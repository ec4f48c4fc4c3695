import { sql, type SQL } from "drizzle-orm";

/**
 * The most history rows a count reads: a history up to about this size is counted row by row; a larger one
 * from a block sample of about this many rows, scaled up. The history holds every finished job for the
 * retention (at 1,000 jobs/s and the default 7 days, 600 M rows), so an exact count by state would read all
 * of it at every metrics scrape and every dashboard view.
 */
export const HISTORY_COUNT_ROWS = 100_000;

/** Columns the history can be counted by. */
export type HistoryCountKey = "queue" | "task" | "state";

/**
 * The percentage of the history's blocks a count samples: 100 while the history holds at most
 * HISTORY_COUNT_ROWS rows by the planner's statistics, less beyond. A partition never analyzed yet counts
 * its size at 128 bytes a row (a finished job's row is larger), so a count of a fresh history stays exact
 * until it is some 12 MB.
 */
const SAMPLED_PERCENT = sql`(select least(100, 100.0 * ${HISTORY_COUNT_ROWS} / greatest(1, sum(
    case when c.reltuples >= 0 then c.reltuples else pg_relation_size(c.oid) / 128 end)))::float8
  from pg_class c
  where c.oid = 'akadze.job_history'::regclass
    or c.oid in (select i.inhrelid from pg_inherits i where i.inhparent = 'akadze.job_history'::regclass))`;

/** Whether `historyCounts` estimates (the history is past HISTORY_COUNT_ROWS), as a boolean expression. */
export const HISTORY_SAMPLED = sql`(${SAMPLED_PERCENT} < 100)`;

/**
 * The history's jobs (succeeded, cancelled, rate_limited) by `keys`, as a subquery with those columns and `n`:
 * counted row by row while the history is small, estimated from a block sample of about HISTORY_COUNT_ROWS
 * rows once it is larger (HISTORY_SAMPLED; a queue, task or state seen in no sampled block is left out). The
 * queue table and the dead letters are small and counted exactly by the callers.
 */
export function historyCounts(keys: HistoryCountKey[]): SQL {
  const columns = sql.raw(keys.join(", "));
  return sql`select ${columns}, round(count(*) * 100 / ${SAMPLED_PERCENT})::bigint as n
    from akadze.job_history tablesample system (${SAMPLED_PERCENT})
    group by ${columns}`;
}
