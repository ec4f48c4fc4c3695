import { sql, type SQL } from "drizzle-orm";
import { ofTenant } from "../claim/fair.js";

/** Sets a tenant's weight in fair claims (`fair.ts`), or takes it back to 1 (`null`: no row). */
export function setFairWeightStatement(key: string, weight: number | null): SQL {
  const set = weight === null
    ? sql`delete from akadze.fair_weights where key = ${key}`
    : sql`insert into akadze.fair_weights (key, weight) values (${key}, ${weight}::int)
    on conflict (key) do update set weight = excluded.weight, updated_at = now()`;
  // The tenant's queued jobs take their turns again at the new step (1 / weight), each key's from its first queued
  // turn: a weight applies to the backlog already queued, not only to the jobs enqueued after it (fair-turns.ts).
  return sql`with weighed as (${set}),
    turns as (
      select q.id, min(q.fair_tag) over (partition by q.fair_key)
        + (row_number() over (partition by q.fair_key order by q.fair_tag, q.run_at, q.id) - 1)::float8 / ${weight ?? 1}::int as tag
      from akadze.jobs q
      where q.state = 'queued' and q.fair_tag is not null and ${ofTenant(sql`q.fair_key`, sql`${key}::text`)}
    )
    update akadze.jobs j set fair_tag = t.tag from turns t where j.id = t.id and j.state = 'queued' and j.fair_tag is distinct from t.tag`;
}

/** Every tenant's weight other than 1, by key, as one json array. */
export function listFairWeightsStatement(): SQL {
  return sql`select coalesce(json_agg(json_build_object('key', key, 'weight', weight) order by key), '[]'::json) as r from akadze.fair_weights`;
}
