import { sql, type SQL } from "drizzle-orm";

/** Sets a tenant's weight in fair claims (`fair.ts`), or takes it back to 1 (`null`: no row). */
export function setFairWeightStatement(key: string, weight: number | null): SQL {
  if (weight === null) return sql`delete from akadze.fair_weights where key = ${key}`;
  return sql`insert into akadze.fair_weights (key, weight) values (${key}, ${weight}::int)
    on conflict (key) do update set weight = excluded.weight, updated_at = now()`;
}

/** Every tenant's weight other than 1, by key, as one json array. */
export function listFairWeightsStatement(): SQL {
  return sql`select coalesce(json_agg(json_build_object('key', key, 'weight', weight) order by key), '[]'::json) as r from akadze.fair_weights`;
}
