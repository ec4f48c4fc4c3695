/**
 * akadze's tables as a drizzle schema, so an application can include them in its own
 * drizzle-kit migrations (or run ours with `migrate(db)`).
 *
 * @example
 * import { allJobs } from "akadze/schema";
 * const failed = await db.select().from(allJobs).where(eq(allJobs.state, "failed"));
 */
import { sql } from "drizzle-orm";
import type { ErrorEntry } from "./core/errors.js";
import type { TraceCarrier } from "./core/tracing.js";
import { akadze, tz } from "./schema-base.js";
import {
  bigint, boolean, check, doublePrecision, index, integer, jsonb, primaryKey, smallint, text, uniqueIndex,
} from "drizzle-orm/pg-core";

export { akadze } from "./schema-base.js";

/**
 * The live jobs: `queued` and `running`, what a claim can touch. A job that finishes moves out in the
 * statement that finishes it: to `jobHistory` (succeeded, cancelled, rate_limited) or `failedJobs`. Read
 * `allJobs` for every job whatever its state. See `JOB_STATES` for what moves a job between states.
 */
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
  /**
   * A debounced task's key (see `app.debounced`): enqueues with the same key coalesce into the one queued job
   * that holds it. The claim clears it, so a job that left `queued` never takes more payloads.
   */
  debounceKey: text("debounce_key"),
  /**
   * The fairness key (a tenant, a customer), set at enqueue: claims share their batch across the keys with due
   * jobs, so one key's backlog never makes another key wait behind it (docs/flow-control.md#fairness). A
   * two-level key is stored as `tenant \x01 sub-key` (`storedFairKey` in sql/claim/fair.ts).
   */
  fairKey: text("fair_key"),
  /**
   * A keyed job's turn (`sql/claim/fair-turns.ts`): fair claims take due keyed jobs in this order. Given by its enqueue, or by the
   * first claim that finds it due (a job queued for later or another way: parked till then, null): one step
   * (1 ÷ the tenant's weight) after its key's last queued job, and never before the claims' virtual time
   * (`fair_cursor.tag`), so a key new to the queue starts at the others' next turn, not behind their backlog.
   */
  fairTag: doublePrecision("fair_tag"),
  /**
   * The W3C trace context (`traceparent`, and `tracestate` if any) of the code that enqueued the job, when the
   * app traces (docs/observe.md#tracing): each run's span links to it. Null: not traced, or no span was active.
   */
  traceContext: jsonb("trace_context").$type<TraceCarrier>(),
}, (t) => [
  check("jobs_state_check", sql`${t.state} in ('queued', 'running')`),
  check("jobs_attempts_check", sql`${t.maxAttempts} >= 1 and ${t.attempt} >= 0`),
  // The plain scan's order (claim.ts), of one queue and of every queue: it reads the first due rows instead of
  // sorting every queued one. Keyed jobs with a turn are not in them (jobs_tag_idx holds those, in turn order): a
  // keyed enqueue writes no entry here, and a fair claim can tell from one probe whether its plain scan has a job to offer.
  index("jobs_claim_idx").on(t.queue, t.priority.desc(), t.runAt, t.id).where(sql`${t.state} = 'queued' and ${t.fairTag} is null`),
  index("jobs_due_idx").on(t.priority.desc(), t.runAt, t.id).where(sql`${t.state} = 'queued' and ${t.fairTag} is null`),
  // The claim takes each limited key's next jobs by this index, so a long backlog under a limit stays cheap.
  index("jobs_limit_idx").on(t.limitKey, t.priority.desc(), t.runAt, t.id).where(sql`${t.state} = 'queued' and ${t.limitKey} is not null`),
  // Only queued jobs to cancel before they are due (a cancel request on a job that went back to the queue, an
  // `expiresAt`), by the moment they must be cancelled: the claim finds those whose moment passed without reading
  // the jobs not due yet.
  index("jobs_stop_idx").on(sql`(case when ${t.cancelRequested} then '-infinity'::timestamptz else ${t.expiresAt} end)`)
    .where(sql`${t.state} = 'queued' and (${t.expiresAt} is not null or ${t.cancelRequested})`),
  // Only jobs that opted into limitWait: each claim looks for those held back too long without reading the backlog.
  index("jobs_limit_wait_idx").on(t.runAt).where(sql`${t.state} = 'queued' and ${t.limitWaitMs} is not null`),
  // A running job's lease is its owner's row (`owners`); only a job leased by a version before the owners table
  // (or given back by its own engine's heartbeat as forgotten) has an expiry of its own, and only those are indexed.
  index("jobs_lease_idx").on(t.leaseExpiresAt).where(sql`${t.state} = 'running' and ${t.leaseExpiresAt} is not null`),
  index("jobs_owner_idx").on(t.leaseOwner).where(sql`${t.state} = 'running'`),
  // Only jobs that have a key: jobs without one (most) cost this index nothing. Every row is active now
  // (the state check), so the predicate only keeps the index the enqueue's ON CONFLICT names.
  uniqueIndex("jobs_unique_key_active").on(t.uniqueKey).where(sql`${t.state} in ('queued', 'running') and ${t.uniqueKey} is not null`),
  // One queued job per task and debounce key: the debounced enqueue's ON CONFLICT names it.
  // A fair claim walks the keys with queued jobs through this index (one probe a key) and takes each key's next jobs.
  // By bytes (collate "C") whatever the database's collation: a tenant's sub-keys are then one range of it.
  index("jobs_fair_idx").on(sql`(${t.fairKey} collate "C")`, t.priority.desc(), t.runAt, t.id).where(sql`${t.state} = 'queued' and ${t.fairKey} is not null`),
  // A fair claim takes due keyed jobs in turn order through this index, as the plain claim reads jobs_due_idx.
  index("jobs_tag_idx").on(t.priority.desc(), t.fairTag, t.runAt, t.id).where(sql`${t.state} = 'queued' and ${t.fairTag} is not null`),
  // A job entering the queue takes its turn after its key's last queued one: one probe of this index.
  index("jobs_key_tag_idx").on(t.fairKey, t.fairTag).where(sql`${t.state} = 'queued' and ${t.fairTag} is not null`),
  // Keyed jobs parked until they are due (no turn yet): a fair claim gives the due ones their turns.
  index("jobs_parked_idx").on(t.runAt).where(sql`${t.state} = 'queued' and ${t.fairKey} is not null and ${t.fairTag} is null`),
  uniqueIndex("jobs_debounce_key_queued").on(t.task, t.debounceKey).where(sql`${t.state} = 'queued' and ${t.debounceKey} is not null`),
]);

/** The columns a finished job keeps: a job's, less its lease (always null once it finished). */
function finishedColumns() {
  return {
    id: bigint("id", { mode: "number" }).notNull(),
    task: text("task").notNull(),
    queue: text("queue").notNull(),
    args: jsonb("args").notNull(),
    state: text("state").notNull(),
    priority: smallint("priority").notNull(),
    attempt: integer("attempt").notNull(),
    maxAttempts: integer("max_attempts").notNull(),
    runAt: tz("run_at").notNull(),
    expiresAt: tz("expires_at"),
    uniqueKey: text("unique_key"),
    limitKey: text("limit_key"),
    limitWaitMs: bigint("limit_wait_ms", { mode: "number" }),
    cancelRequested: boolean("cancel_requested").notNull(),
    errors: jsonb("errors").$type<ErrorEntry[]>().notNull(),
    result: jsonb("result"),
    createdAt: tz("created_at").notNull(),
    startedAt: tz("started_at"),
    finishedAt: tz("finished_at").notNull(),
    fairKey: text("fair_key"),
    traceContext: jsonb("trace_context").$type<TraceCarrier>(),
  };
}

/**
 * Jobs that ended `succeeded`, `cancelled` or `rate_limited`. `akadze migrate` makes it a table partitioned
 * by range of `finished_at` (drizzle-kit cannot declare that; a plain table from your own drizzle-kit
 * migrations works too, pruned row by row): retention drops whole partitions past the horizon, and a
 * DEFAULT partition takes the rows no partition covers. No primary key: a partitioned table's would have
 * to include `finished_at`; ids are unique because they come from `jobs`.
 */
export const jobHistory = akadze.table("job_history", finishedColumns(), (t) => [
  check("job_history_state_check", sql`${t.state} in ('succeeded', 'cancelled', 'rate_limited')`),
  // getJob, listJobs' pages and requeue find a job by id in every partition.
  index("job_history_id_idx").on(t.id),
  // Block ranges, a few pages per partition: reads by finish time (metrics, throughput) and the row-by-row
  // pruning of the default partition, at almost no cost per insert (rows arrive in finish order).
  index("job_history_finished_idx").using("brin", t.finishedAt),
  // A first maxStarts limit reads its key's latest starts; only jobs with a limit key pay for it.
  index("job_history_limit_idx").on(t.limitKey, t.startedAt).where(sql`${t.limitKey} is not null`),
]);

/** The dead letters: jobs that ended `failed`. They stay until `requeue` moves one back or their own horizon passes. */
export const failedJobs = akadze.table("failed_jobs", { ...finishedColumns(), id: bigint("id", { mode: "number" }).primaryKey() }, (t) => [
  check("failed_jobs_state_check", sql`${t.state} = 'failed'`),
  index("failed_jobs_finished_idx").on(t.finishedAt),
]);

/**
 * Every job whatever its state: `jobs`, `jobHistory` and `failedJobs` as one view (made by `akadze migrate`),
 * with a job's columns (a finished job's lease is null). What getJob, listJobs, the CLI and the metrics read.
 * @example const failed = await db.select().from(allJobs).where(eq(allJobs.state, "failed"));
 */
export const allJobs = akadze.view("all_jobs", {
  ...finishedColumns(),
  leaseOwner: text("lease_owner"),
  leaseExpiresAt: tz("lease_expires_at"),
  // A live job has not finished.
  finishedAt: tz("finished_at"),
}).existing();

// The tables beside a job (replays, progress, logs) and what events and debounced enqueues keep: schema-beside.ts.
export * from "./schema-beside.js";
// What claims share across the cluster to hold limits and fairness: schema-flow.ts.
export * from "./schema-flow.js";
// What the engines share across the cluster (queues, schedules, workers, leases, fan-out slots): schema-cluster.ts.
export * from "./schema-cluster.js";
// A workflow's steps and the children it waits for: schema-workflow.ts.
export * from "./schema-workflow.js";
