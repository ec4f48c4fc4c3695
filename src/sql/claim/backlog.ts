import { sql, type SQL } from "drizzle-orm";
import { cte } from "./cte-names.js";
import type { ClaimCore, RideSql } from "./ride.js";

/**
 * `backlog`: how many due jobs this claim could have taken, counted up to `bound` (so its cost never grows
 * with the queue): the unlimited ones by the claim's own condition and index, plus the limited ones this claim
 * took (each key brings at most what it has room for, so more of them would wait anyway). It reads the same
 * snapshot as the claim, so the batch just claimed is part of it. Fan-out sizes the invocations on it.
 */
function backlogCte(o: { eligible: SQL; unlimited: SQL; bound: number; limits: boolean }): SQL {
  // A literal, rounded up to a power of two: a prepared claim keeps few texts, as with its lock limit.
  const bound = 2 ** Math.ceil(Math.log2(Math.max(1, o.bound)));
  // (Jobs without a turn and keyed jobs with one apart, each by its own index: jobs_due_idx and jobs_tag_idx.)
  const count = (turn: SQL) => sql`(select count(*) from (select 1 from akadze.jobs j where ${turn} and ${o.eligible} and ${o.unlimited} limit ${sql.raw(String(bound))}) b)`;
  return sql`backlog as (
      select least(${count(sql`j.fair_tag is null`)} + ${count(sql`j.fair_tag is not null`)}, ${sql.raw(String(bound))})
        ${o.limits ? sql`+ (select count(*) from ${cte("limitedCandidates")})` : sql``} as n
    )`;
}

/** The backlog as it rides on a claim built on `core`: counted up to `bound`, reported as `backlog`. */
export function backlogRide(core: ClaimCore, bound: number): RideSql {
  return { after: [backlogCte({ ...core, bound })], report: { backlog: sql`(select n from backlog)` } };
}
