// What claims share across the cluster to hold flow control: the limits per key with their slots and tokens, and
// the fairness cursors and weights. Re-exported by schema.ts, which drizzle-kit reads.
import { sql } from "drizzle-orm";
import { bigint, check, doublePrecision, index, integer, primaryKey, smallint, text } from "drizzle-orm/pg-core";
import { akadze, tz } from "./schema-base.js";

/** A limit per key: `maxStarts` per sliding `windowMs` and/or `maxRunning`. */
export const limits = akadze.table("limits", {
  key: text("key").primaryKey(),
  maxStarts: integer("max_starts"),
  windowMs: bigint("window_ms", { mode: "number" }),
  maxRunning: integer("max_running"),
  updatedAt: tz("updated_at").notNull().defaultNow(),
});

/**
 * One row per concurrent run a key allows. A claim takes a free slot (row lock + skip locked),
 * completion frees it; row-level locking makes `maxRunning` hold under concurrent claims.
 */
export const limitSlots = akadze.table("limit_slots", {
  key: text("key").notNull(),
  slot: integer("slot").notNull(),
  jobId: bigint("job_id", { mode: "number" }),
}, (t) => [primaryKey({ columns: [t.key, t.slot] }), index("limit_slots_job_idx").on(t.jobId)]);

/**
 * One row per start a key allows inside its window: a claim reuses a token only once its last
 * start has left the window, which is exactly a sliding-window rate limit.
 */
export const limitTokens = akadze.table("limit_tokens", {
  key: text("key").notNull(),
  slot: integer("slot").notNull(),
  lastStart: tz("last_start"),
}, (t) => [primaryKey({ columns: [t.key, t.slot] })]);

/**
 * Where fair claims go on walking the fairness keys: the key after the last one a claim served. One row (id 1),
 * written by a claim that finds it unlocked; a claim that meets another's lock leaves it (the other moves it on).
 */
export const fairCursor = akadze.table("fair_cursor", {
  id: smallint("id").primaryKey().default(1),
  key: text("key").notNull(),
  /**
   * The claims' virtual time: the latest turn (`jobs.fair_tag`) a fair claim took. A job whose key has no queued
   * job takes its turn here.
   */
  tag: doublePrecision("tag").notNull().default(0),
}, (t) => [check("fair_cursor_one_row", sql`${t.id} = 1`)]);

/**
 * Where fair claims go on walking one tenant's sub-keys (`fairSubKey`): the last key of the tenant a claim walked.
 * Only tenants with sub-keys have a row; a claim that meets another's lock on one leaves it.
 */
export const fairSubCursors = akadze.table("fair_sub_cursors", {
  tenant: text("tenant").primaryKey(),
  key: text("key").notNull(),
});

/** Tenants that weigh more (or less) than 1 in a fair claim's shares (`setFairWeight`); a tenant without a row weighs 1. */
export const fairWeights = akadze.table("fair_weights", {
  key: text("key").primaryKey(),
  weight: integer("weight").notNull(),
  updatedAt: tz("updated_at").notNull().defaultNow(),
}, (t) => [check("fair_weights_weight_check", sql`${t.weight} between 1 and 1000`)]);
