import { sql, type SQL } from "drizzle-orm";
import { tokenFree } from "./start.js";
import { cte } from "./cte-names.js";
import { candidateColumns } from "./fair.js";

/**
 * Limited keys' candidates: each key brings at most as many jobs as it could start now (free
 * `maxRunning` slots, `maxStarts` tokens out of the window), read from the snapshot. This only sizes
 * what is claimed; the locked slot and token rows taken at start decide what runs.
 */
export function limitedCandidatesCtes(p: { batchSize: number; now: SQL; eligible: SQL; stop: SQL }): SQL[] {
  return [
    sql`room as (
      select l.key, least(${p.batchSize},
        case when l.max_running is null then ${p.batchSize}
             else l.max_running - (select count(*) from akadze.limit_slots s where s.key = l.key and s.job_id is not null) end,
        case when l.max_starts is null then ${p.batchSize}
             else (select count(*) from akadze.limit_tokens t where t.key = l.key and ${tokenFree(p.now)}) end) as n
      from akadze.limits l
    )`,
    // (The constant inner limit lets the planner walk jobs_limit_idx; the outer one stops it, and
    // so the locking, after r.n rows.)
    sql`${cte("limitedCandidates")} as (
      select x.* from room r cross join lateral (
        select * from (
          select ${candidateColumns(p.stop, true)}
          from akadze.jobs j
          where j.limit_key = r.key and ${p.eligible}
          -- (nulls last, as the index is declared: priority is never null, but only then the index gives the order)
          order by j.priority desc nulls last, j.run_at, j.id
          limit ${p.batchSize}
          for update of j skip locked
        ) y limit r.n
      ) x
      where r.n > 0
    )`,
  ];
}
