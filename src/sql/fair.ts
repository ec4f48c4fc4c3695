import { sql, type SQL } from "drizzle-orm";
import { cte } from "./cte-names.js";

/**
 * Fair claims: a claim shares its batch across the fairness keys with due jobs (`EnqueueOptions.fairKey`),
 * so one key's backlog never makes another key wait behind it.
 *
 * - The claim walks the keys with due jobs (`run_at` passed) in key order, from the key after the cursor
 *   (`akadze.fair_cursor`), wrapping around: one probe of `jobs_fair_idx` per key, at most `batchSize` keys.
 *   Keys whose jobs are all delayed are not walked: the probe checks `run_at` in the index, job by job, without
 *   reading a row, so they cost no turn and only their index entries' reading.
 * - Each walked key offers its next `share` due jobs (the batch divided by the keys walked), by its own order
 *   (priority, due time, id); then the claim's plain scan offers the first other jobs in claim order, as many
 *   as the batch still lacks and at least a key's share (jobs without a key, and any key's when the walked
 *   keys cannot fill the batch).
 * - The batch is cut by priority first, then by each job's rank within its key (`fair_rank`), then by walk
 *   position: every key's first job goes before any key's second. Jobs without a key rank as one more key.
 * - The cursor moves to the last walked key, served or not (its due jobs may be for tasks or queues this claim
 *   does not take, or held by another claim), so the next claim serves the keys after it. A claim that meets
 *   another claim's lock on the cursor leaves it: the other moves it on.
 */
/**
 * Claim order, of columns under `alias`: higher priority first, then the earliest due, then the oldest; a fair
 * claim puts each job's rank within its key and its walk position (the plain scan's keys last) after priority.
 */
export function claimOrder(fair: boolean, alias = ""): SQL {
  const a = sql.raw(alias === "" ? "" : `${alias}.`);
  return fair ? sql`${a}priority desc, ${a}fair_rank, ${a}walk nulls last, ${a}run_at, ${a}id` : sql`${a}priority desc, ${a}run_at, ${a}id`;
}

/**
 * Whether any queued job has a fairness key: the next claim walks the keys only then. Asked for the first key in
 * index order, so it is one probe of jobs_fair_idx whatever the statistics say (an `exists` may scan the table).
 */
export const ANY_FAIR_JOB = sql`(select fair_key from akadze.jobs where state = 'queued' and fair_key is not null order by fair_key limit 1) is not null`;

/** The most keys one claim walks: its batch size, as a literal (a prepared claim keeps one plan). */
function walkBound(batchSize: number): SQL {
  return sql.raw(String(Math.max(1, Math.floor(batchSize))));
}

/**
 * `fair_walk (key, n, share)`: the keys a claim serves, in walk order `n`, and how many jobs each offers; and
 * `fair_candidates`, each walked key's next due jobs. They come before the plain scan, which offers the rest
 * (`fairPlainScan`).
 */
export function fairCandidatesCtes(o: { now: SQL; eligible: SQL; unlimited: SQL; stop: SQL; batchSize: number }): SQL[] {
  const bound = walkBound(o.batchSize);
  // (run_at is a column of jobs_fair_idx, so the scan checks it in the index: a delayed job costs no row read.
  // Jobs due only because they expired or a cancel was asked are not looked for: the plain scan ends them.)
  const queuedKey = sql`j.state = 'queued' and j.fair_key is not null and j.run_at <= ${o.now}`;
  // (A scalar subquery, not a join: only as a parameter can the cursor bound the index scan.)
  const cursor = sql`(select key from fair_from)`;
  return [
    sql`fair_from as (select coalesce((select key from akadze.fair_cursor where id = 1), '') as key)`,
    // A loose index scan: each step reads the next key of jobs_fair_idx, so the walk costs one probe a key
    // however many jobs a key holds. After the cursor first; then from the start up to the cursor.
    sql`fair_walk as (
      with recursive after_cursor(key, n) as (
        (select j.fair_key, 1 from akadze.jobs j where ${queuedKey} and j.fair_key > ${cursor} order by j.fair_key limit 1)
        union all
        select (select j.fair_key from akadze.jobs j where ${queuedKey} and j.fair_key > a.key order by j.fair_key limit 1), a.n + 1
        from after_cursor a where a.key is not null and a.n < ${bound}
      ),
      walked_after as (select count(*)::int as n from after_cursor where key is not null),
      from_start(key, n) as (
        (select j.fair_key, (select n from walked_after) + 1 from akadze.jobs j
         where ${queuedKey} and j.fair_key <= ${cursor} and (select n from walked_after) < ${bound} order by j.fair_key limit 1)
        union all
        select (select j.fair_key from akadze.jobs j where ${queuedKey} and j.fair_key > s.key and j.fair_key <= ${cursor}
                order by j.fair_key limit 1), s.n + 1
        from from_start s where s.key is not null and s.n < ${bound}
      ),
      walked as (select key, n from after_cursor where key is not null union all select key, n from from_start where key is not null)
      select key, n, ceil(${o.batchSize}::float8 / count(*) over ())::int as share from walked
    )`,
    // (As for limited keys: the constant inner limit lets the planner walk jobs_fair_idx; the outer one stops
    // it, and so the locking, after the key's share.)
    sql`fair_candidates as (
      select x.* from fair_walk w cross join lateral (
        select * from (
          select j.id, j.priority, j.run_at, ${o.stop} as stop, false as limited, j.fair_key
          from akadze.jobs j
          where j.fair_key = w.key and ${o.eligible} and ${o.unlimited}
          order by j.priority desc nulls last, j.run_at, j.id
          limit ${bound}
          for update of j skip locked
        ) y limit w.share
      ) x
    )`,
  ];
}

/**
 * What a fair claim's plain scan offers, after the walked keys' candidates (`fair_candidates`): jobs not among
 * them (`exclude`, for its where clause), at most `room` (an outer limit): what the batch still lacks, and at
 * least a key's share, so jobs without a key get their turn as one more key. Past that the plain scan would
 * only lock rows the batch cut drops.
 */
export function fairPlainScan(batchSize: number): { exclude: SQL; room: SQL } {
  return {
    exclude: sql`and j.id not in (select id from fair_candidates)`,
    room: sql`(select greatest(${batchSize} - (select count(*) from fair_candidates),
        ceil(${batchSize}::float8 / ((select count(*) from fair_walk) + 1)))::int)`,
  };
}

/** The body of the `candidates` CTE for a fair claim: `offered` (the plain and limited candidates) and the walked keys' jobs, ranked per key and cut to the batch. */
export function fairCandidates(offered: SQL, batchSize: number): SQL {
  return sql`select c.*, w.n as walk from (
        select u.*, row_number() over (partition by u.fair_key order by u.priority desc, u.run_at, u.id) as fair_rank
        from (${offered} union all select * from fair_candidates) u
      ) c left join fair_walk w on w.key = c.fair_key
      order by c.priority desc, c.fair_rank, w.n nulls last, c.run_at, c.id
      limit ${batchSize}`;
}

/**
 * Moves the cursor to the last walked key, skipping it when another claim holds it: past every key walked, served
 * or not, so keys that offer this claim nothing never hold the walk in place. A walk that came round to the
 * cursor's own key leaves the row alone.
 */
export function fairCursorCtes(): SQL[] {
  return [
    sql`fair_next as (select key from (select key from fair_walk order by n desc limit 1) l where key <> (select key from fair_from))`,
    sql`fair_moved as (
      update akadze.fair_cursor f set key = n.key from fair_next n
      where f.id = (select id from akadze.fair_cursor where id = 1 for update skip locked)
      returning f.id
    )`,
    sql`fair_first as (
      insert into akadze.fair_cursor (id, key) select 1, key from fair_next where not exists (select 1 from akadze.fair_cursor)
      on conflict do nothing
      returning id
    )`,
  ];
}
