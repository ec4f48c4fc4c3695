// The tables beside a job, each a table of its own rather than a column of `jobs` (a column would ride along
// every claim and every move into the history for a fact few jobs have), and what sent events and leading
// debounces keep. Re-exported by schema.ts, which drizzle-kit reads.
import { bigint, index, integer, jsonb, primaryKey, text } from "drizzle-orm/pg-core";
import { akadze, tz } from "./schema-base.js";

/**
 * Where a replayed job came from (`replayJob`, `replayJobs`): one row per replay, by the new job's id. A table
 * of its own, not a column of `jobs`: a column would have to ride along every statement that moves a job into
 * the history or the dead letters, for a fact only replays have. Retention deletes a row with its job.
 */
export const replays = akadze.table("replays", {
  jobId: bigint("job_id", { mode: "number" }).primaryKey(),
  /** The finished job it replays. */
  replayOf: bigint("replay_of", { mode: "number" }).notNull(),
});

/**
 * What a running job reports of itself (`job.progress`, `job.log`): its latest progress and its log lines' tally,
 * one row per job that reported anything. A table of its own, like `replays`: a column of `jobs` would ride along
 * every claim and every settle that moves a job into the history, for a fact most jobs never have. Retention
 * deletes a row with its job.
 */
export const jobProgress = akadze.table("job_progress", {
  jobId: bigint("job_id", { mode: "number" }).primaryKey(),
  /** The last value the job reported with `job.progress(value)` (JSON), null before any. */
  progress: jsonb("progress"),
  progressAt: tz("progress_at"),
  /** Lines kept in `job_logs` and their bytes, which the per-job caps are checked against. */
  logLines: integer("log_lines").notNull().default(0),
  logBytes: integer("log_bytes").notNull().default(0),
  /** Lines dropped because the job's log was full. */
  logsDropped: integer("logs_dropped").notNull().default(0),
  updatedAt: tz("updated_at").notNull().defaultNow(),
}, (t) => [
  // Retention looks for the rows of jobs gone from every table among the rows not written since its horizon.
  index("job_progress_updated_idx").on(t.updatedAt),
]);

/** A job's log lines (`job.log(...)`), in the order it wrote them, each with the attempt that wrote it. */
export const jobLogs = akadze.table("job_logs", {
  jobId: bigint("job_id", { mode: "number" }).notNull(),
  /** 1, 2, ... in the job's order across its attempts. */
  seq: integer("seq").notNull(),
  attempt: integer("attempt").notNull(),
  loggedAt: tz("logged_at").notNull(),
  message: text("message").notNull(),
}, (t) => [primaryKey({ columns: [t.jobId, t.seq] })]);

/**
 * The events sent through an app (`app.sendEvent`), by name and id: the statement that sends one inserts its row
 * first and does nothing more when the row was there, so a repeated id starts no subscriber and wakes no wait
 * again. Rows older than the finished jobs' retention go in the claims that carry retention.
 */
export const sentEvents = akadze.table("sent_events", {
  name: text("name").notNull(),
  /** The id the producer gave (an idempotency key) or a generated one. */
  id: text("id").notNull(),
  sentAt: tz("sent_at").notNull(),
}, (t) => [primaryKey({ columns: [t.name, t.id] }), index("sent_events_sent_at_idx").on(t.sentAt)]);

/**
 * A leading-edge debounce's window per task and key (`app.debounced` with `leading: true`): an enqueue at or
 * after `quiet_at` finds the key quiet and runs at once; one before it joins the key's trailing job. Every
 * enqueue moves `quiet_at` to a window after itself. A row past its `quiet_at` means what no row means.
 */
export const debounceWindows = akadze.table("debounce_windows", {
  task: text("task").notNull(),
  key: text("key").notNull(),
  quietAt: tz("quiet_at").notNull(),
  /** Enqueues since the key was last quiet (1: the last one ran at once). */
  enqueues: integer("enqueues").notNull(),
}, (t) => [primaryKey({ columns: [t.task, t.key] }), index("debounce_windows_quiet_at_idx").on(t.quietAt)]);
