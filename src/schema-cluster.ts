// What the engines share across the cluster beside the jobs: queue pauses, schedules, the workers registry,
// the engines' leases, fan-out's invocation slots and the dashboard's sign-outs. Re-exported by schema.ts, which
// drizzle-kit reads.
import { sql } from "drizzle-orm";
import { bigint, boolean, index, integer, jsonb, primaryKey, smallint, text } from "drizzle-orm/pg-core";
import { akadze, tz } from "./schema-base.js";

/** Queues with a cluster-wide state; a queue with no row is active. */
export const queues = akadze.table("queues", {
  name: text("name").primaryKey(),
  paused: boolean("paused").notNull().default(false),
  updatedAt: tz("updated_at").notNull().defaultNow(),
});

/**
 * One row per schedule, the last slot enqueued in it: inserting a slot is a compare-and-set on this row.
 * A schedule defined in code gets its row from the first invocation that sees it; a runtime schedule
 * (`createSchedule`, `runtime`) is defined by its row: timing, args, policies, tenant, pause.
 */
export const schedules = akadze.table("schedules", {
  name: text("name").primaryKey(),
  task: text("task").notNull(),
  lastSlot: tz("last_slot"),
  seenAt: tz("seen_at").notNull().defaultNow(),
  /** Made by `createSchedule` (true) or recorded for a schedule in code (false). */
  runtime: boolean("runtime").notNull().default(false),
  tenant: text("tenant"),
  args: jsonb("args"),
  cron: text("cron"),
  timezone: text("timezone"),
  everyMs: bigint("every_ms", { mode: "number" }),
  /** How many missed slots a gap enqueues (1: the latest only). */
  catchUp: smallint("catch_up").notNull().default(1),
  /** Drop a slot while the job of the previous one is active (overlap "skip"). */
  skipOverlap: boolean("skip_overlap").notNull().default(false),
  paused: boolean("paused").notNull().default(false),
  /** Bumped by every change, so a slot offered from an older definition fires nothing. */
  revision: integer("revision").notNull().default(0),
  /** A runtime schedule's earliest slot that may fire (none before it: not those before its creation or resume). */
  nextSlot: tz("next_slot"),
  /** The job the last fired slot enqueued: overlap "skip" waits while it is queued or running. */
  lastJobId: bigint("last_job_id", { mode: "number" }),
  createdAt: tz("created_at").notNull().defaultNow(),
  updatedAt: tz("updated_at").notNull().defaultNow(),
}, (t) => [
  // What a claim probes: runtime schedules with a slot due.
  index("schedules_due_idx").on(t.nextSlot).where(sql`${t.runtime} and not ${t.paused}`),
  index("schedules_tenant_idx").on(t.tenant, t.name).where(sql`${t.tenant} is not null`),
]);

/** Every invocation and long-lived worker that ran, for `workers list` and metrics. */
export const workers = akadze.table("workers", {
  id: text("id").primaryKey(),
  kind: text("kind").notNull(),
  queues: jsonb("queues").notNull().default([]),
  startedAt: tz("started_at").notNull().defaultNow(),
  lastSeenAt: tz("last_seen_at").notNull().defaultNow(),
  stoppedAt: tz("stopped_at"),
  jobsDone: integer("jobs_done").notNull().default(0),
  /** The invocation that started this one by fan-out (a sibling or a successor); null for a cron tick or a worker. */
  startedBy: text("started_by"),
}, (t) => [index("workers_last_seen_idx").on(t.lastSeenAt)]);

/**
 * The lease of each engine (an invocation or a worker lane) on the jobs it runs: one row per owner, renewed by
 * its claims and heartbeats, so a heartbeat writes one row however many jobs the engine holds. A job leased to
 * an owner whose row expired is recovered by another engine (sql/claim/recover.ts); an owner row with no running
 * job left is deleted then.
 */
export const owners = akadze.table("owners", {
  owner: text("owner").primaryKey(),
  expiresAt: tz("expires_at").notNull(),
});

/**
 * Fan-out's cluster-wide cap: slots 1..maxInvocations per scope, each held by at most one live invocation (the
 * primary key makes two holders of one slot impossible, so racing ticks never start more than the cap). A holder
 * that dies leaves its slot to expire at `expires_at`.
 */
export const invocationSlots = akadze.table("invocation_slots", {
  /** Which pool of invocations: the queues they claim from ("*" for every queue). */
  scope: text("scope").notNull(),
  slot: integer("slot").notNull(),
  /** The invocation holding it, null once released. */
  holder: text("holder"),
  /** The first invocation of the holder's chain (the cron tick that started it all). */
  chain: text("chain"),
  takenAt: tz("taken_at").notNull().defaultNow(),
  expiresAt: tz("expires_at").notNull(),
}, (t) => [primaryKey({ columns: [t.scope, t.slot] })]);

/**
 * Dashboard sessions signed out before they expired: the session cookie is signed and stateless, so a
 * sign-out records its session here and the dashboard refuses it from then on. Rows go once the cookie
 * would have expired anyway.
 */
export const dashboardSignOuts = akadze.table("dashboard_sign_outs", {
  /** The session's random token (its CSRF token). */
  session: text("session").primaryKey(),
  expiresAt: tz("expires_at").notNull(),
});
