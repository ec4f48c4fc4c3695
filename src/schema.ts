/**
 * akadze's tables as a drizzle schema, so an application can include them in its own
 * drizzle-kit migrations (or run ours with `migrate(db)`).
 *
 * @example
 * import { jobs } from "akadze/schema";
 * const failed = await db.select().from(jobs).where(eq(jobs.state, "failed"));
 */
import { sql } from "drizzle-orm";
import type { ErrorEntry } from "./core/errors.js";
import {
  bigint, boolean, check, index, integer, jsonb, pgSchema, primaryKey, smallint, text, timestamp, uniqueIndex,
} from "drizzle-orm/pg-core";

export const akadze = pgSchema("akadze");

const tz = (name: string) => timestamp(name, { withTimezone: true, mode: "date" });

/** Every job, whatever its state. See `JOB_STATES` for what moves a job between states. */
export const jobs = akadze.table("jobs", {
  id: bigint("id", { mode: "number" }).primaryKey().generatedAlwaysAsIdentity(),
  task: text("task").notNull(),
  queue: text("queue").notNull().default("default"),
  args: jsonb("args").notNull().default({}),
  state: text("state").notNull().default("queued"),
  priority: smallint("priority").notNull().default(0),
  attempt: integer("attempt").notNull().default(0),
  maxAttempts: integer("max_attempts").notNull().default(3),
  runAt: tz("run_at").notNull().defaultNow(),
  expiresAt: tz("expires_at"),
  uniqueKey: text("unique_key"),
  limitKey: text("limit_key"),
  /** Opt-in: how long a due job may be held back by its limit key before it ends `rate_limited`. */
  limitWaitMs: bigint("limit_wait_ms", { mode: "number" }),
  leaseOwner: text("lease_owner"),
  leaseExpiresAt: tz("lease_expires_at"),
  cancelRequested: boolean("cancel_requested").notNull().default(false),
  errors: jsonb("errors").$type<ErrorEntry[]>().notNull().default([]),
  result: jsonb("result"),
  createdAt: tz("created_at").notNull().defaultNow(),
  startedAt: tz("started_at"),
  finishedAt: tz("finished_at"),
}, (t) => [
  check("jobs_state_check", sql`${t.state} in ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'rate_limited')`),
  check("jobs_attempts_check", sql`${t.maxAttempts} >= 1 and ${t.attempt} >= 0`),
  index("jobs_claim_idx").on(t.queue, t.priority.desc(), t.runAt, t.id).where(sql`${t.state} = 'queued'`),
  // The claim's own order across every queue: it reads the first due rows instead of sorting every queued one.
  index("jobs_due_idx").on(t.priority.desc(), t.runAt, t.id).where(sql`${t.state} = 'queued'`),
  // The claim takes each limited key's next jobs by this index, so a long backlog under a limit stays cheap.
  index("jobs_limit_idx").on(t.limitKey, t.priority.desc(), t.runAt, t.id).where(sql`${t.state} = 'queued' and ${t.limitKey} is not null`),
  // Only jobs that opted into limitWait: each claim looks for those held back too long without reading the backlog.
  index("jobs_limit_wait_idx").on(t.runAt).where(sql`${t.state} = 'queued' and ${t.limitWaitMs} is not null`),
  index("jobs_lease_idx").on(t.leaseExpiresAt).where(sql`${t.state} = 'running'`),
  index("jobs_owner_idx").on(t.leaseOwner).where(sql`${t.state} = 'running'`),
  // (state, finished_at): retention prunes one state by age without walking the failed jobs it keeps.
  index("jobs_finished_idx").on(t.state, t.finishedAt).where(sql`${t.state} in ('succeeded', 'failed', 'cancelled', 'rate_limited')`),
  // Only jobs that have a key: jobs without one (most) cost this index nothing.
  uniqueIndex("jobs_unique_key_active").on(t.uniqueKey).where(sql`${t.state} in ('queued', 'running') and ${t.uniqueKey} is not null`),
]);

/** Queues with a cluster-wide state; a queue with no row is active. */
export const queues = akadze.table("queues", {
  name: text("name").primaryKey(),
  paused: boolean("paused").notNull().default(false),
  updatedAt: tz("updated_at").notNull().defaultNow(),
});

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

/** The last slot enqueued per schedule: inserting a slot is a compare-and-set on this row. */
export const schedules = akadze.table("schedules", {
  name: text("name").primaryKey(),
  task: text("task").notNull(),
  lastSlot: tz("last_slot"),
  seenAt: tz("seen_at").notNull().defaultNow(),
});

/** Every invocation and long-lived worker that ran, for `workers list` and metrics. */
export const workers = akadze.table("workers", {
  id: text("id").primaryKey(),
  kind: text("kind").notNull(),
  queues: jsonb("queues").notNull().default([]),
  startedAt: tz("started_at").notNull().defaultNow(),
  lastSeenAt: tz("last_seen_at").notNull().defaultNow(),
  stoppedAt: tz("stopped_at"),
  jobsDone: integer("jobs_done").notNull().default(0),
}, (t) => [index("workers_last_seen_idx").on(t.lastSeenAt)]);

/**
 * One row per step of a workflow job (see `app.workflow`): a step's stored result, its failures, and what a
 * parked run waits for. No foreign key to `jobs`: a finished job's row may move or be pruned while its steps
 * stay readable; retention deletes them with their job.
 */
export const steps = akadze.table("steps", {
  jobId: bigint("job_id", { mode: "number" }).notNull(),
  name: text("name").notNull(),
  /** The step's position in the handler's order of calls: a replay reaching another name here is an error. */
  seq: integer("seq").notNull(),
  kind: text("kind").notNull(),
  state: text("state").notNull(),
  result: jsonb("result"),
  errors: jsonb("errors").$type<ErrorEntry[]>().notNull().default([]),
  attempts: integer("attempts").notNull().default(0),
  /** When a sleep ends or a wait times out. */
  wakeAt: tz("wake_at"),
  /** The event a `waitForEvent` waits for, and the JSON object its payload must contain. */
  event: text("event"),
  match: jsonb("match"),
  createdAt: tz("created_at").notNull().defaultNow(),
  finishedAt: tz("finished_at"),
}, (t) => [
  primaryKey({ columns: [t.jobId, t.name] }),
  check("steps_kind_check", sql`${t.kind} in ('run', 'sleep', 'event', 'jobs')`),
  check("steps_state_check", sql`${t.state} in ('done', 'retrying', 'failed', 'waiting', 'timed_out')`),
  // sendEvent finds the runs waiting for an event by this index; it holds only the waiting steps.
  index("steps_waiting_event_idx").on(t.event).where(sql`${t.state} = 'waiting' and ${t.kind} = 'event'`),
]);
