import { sql, type SQL } from "drizzle-orm";
import { cte } from "./cte-names.js";

/**
 * The jobs table's planner statistics lag far behind it: never gathered though it already holds over 256 kB
 * (some 1,000 small jobs; a table truncated since, or one drizzle-kit made: migration 0022 seeds a fresh one's),
 * or (analyzed more than 10 s ago) more than 10,000 rows plus 5 % of it changed since (smaller lags cost a claim
 * little). A claim planned on such statistics believes a handful of jobs are queued, so it reads and sorts every
 * queued job instead of walking the claim index for the first batch: over a burst of 20,000 jobs that is a third
 * of the database's work, and with many small concurrent claims most of it. Autovacuum fixes it only after its
 * nap (a minute by default) and at 10 % of the table. For a claim's report: checked by claims that came back full
 * (`batchSize` jobs), the ones a backlog makes.
 */
export function statisticsStale(batchSize: number): SQL {
  return sql`(select count(*) from ${cte("claimed")}) >= ${batchSize} and exists (
      select 1 from pg_class c where c.oid = 'akadze.jobs'::regclass
        and case when c.reltuples < 0 then pg_relation_size(c.oid) > 262144
                 else pg_stat_get_mod_since_analyze(c.oid) > 10000 + 0.05 * c.reltuples
                   and coalesce(greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)) < now() - interval '10 seconds', true) end)`;
}

/** Gathers the jobs table's statistics, unless another session is at it (or vacuuming it) right now. */
export function analyzeJobsStatement(): SQL {
  return sql`analyze (skip_locked) akadze.jobs`;
}

/**
 * Whether the queue table holds more dead row versions than a vacuum's worth (every job leaves two: its
 * claim's update and its move out), for a claim's report, when `asked` (else false, unread). Autovacuum looks
 * only once a minute, and until a vacuum records their space as free, new jobs extend the table: at 1,000
 * jobs/s that is some 10 MB a minute of a table whose live rows fit in a few pages. (`asked` is a parameter,
 * not a variant of the text: a claim that asks once every few seconds would otherwise be a statement each
 * connection plans afresh every time it meets it.)
 */
export function vacuumDue(asked: boolean): SQL {
  return sql`(${asked}::boolean and pg_stat_get_dead_tuples('akadze.jobs'::regclass) > 5000 + 2 * greatest(
      (select reltuples from pg_class where oid = 'akadze.jobs'::regclass), 0))`;
}

/** Reclaims the queue table's dead rows (and refreshes its statistics), unless another session is at it. */
export function vacuumJobsStatement(): SQL {
  return sql`vacuum (analyze, skip_locked) akadze.jobs`;
}
