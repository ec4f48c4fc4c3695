import * as v from "valibot";
import { queryJson, type Db } from "../db/query.js";
import { FairNameSchema, parseOrThrow } from "../core/validate.js";
import { listFairWeightsStatement, setFairWeightStatement } from "../sql/limits/fair-weights.js";

/** A tenant's weight in fair claims. */
export interface FairWeight {
  /** The fairness key (`EnqueueOptions.fairKey`: the tenant). */
  key: string;
  /** Its share of a fair claim's batch against the other walked tenants' (1 when unset). */
  weight: number;
}

/** The most a tenant can weigh: a weight of 1,000 takes 1,000 turns to another's one. */
export const MAX_FAIR_WEIGHT = 1000;

const WeightSchema = v.nullable(v.pipe(v.number("must be a number or null"), v.integer("must be an integer"),
  v.minValue(1, "must be at least 1"), v.maxValue(MAX_FAIR_WEIGHT, `must be at most ${MAX_FAIR_WEIGHT}`)));

/**
 * Sets how much a tenant (a fairness key) weighs in fair claims: among the tenants a claim walks, each gets
 * its weight's part of the batch, so a tenant of weight 3 gets three jobs for another's one while both have due
 * jobs (docs/flow-control.md#fairness). `null` takes the weight back to 1. Takes effect at the next claim.
 * @example await setFairWeight(db, "acme", 3);
 */
export async function setFairWeight(db: Db, key: string, weight: number | null): Promise<FairWeight> {
  const k = parseOrThrow(FairNameSchema, key, "fairness key");
  const w = parseOrThrow(WeightSchema, weight, `weight for ${JSON.stringify(key)}`);
  await db.execute(setFairWeightStatement(k, w === 1 ? null : w));
  return { key: k, weight: w ?? 1 };
}

/** Every tenant whose weight is not 1, by key. @example const weights = await listFairWeights(db); */
export async function listFairWeights(db: Db): Promise<FairWeight[]> {
  return queryJson<FairWeight[]>(db, listFairWeightsStatement());
}
