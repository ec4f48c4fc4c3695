// A workflow job's steps and the child jobs a parked run waits for. Re-exported by schema.ts, which drizzle-kit
// reads.
import { sql } from "drizzle-orm";
import { bigint, check, index, integer, jsonb, primaryKey, text } from "drizzle-orm/pg-core";
import type { ErrorEntry } from "./core/errors.js";
import { akadze, tz } from "./schema-base.js";

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
  // 'patch': a step.patched marker; 'version': the workflow version a run started on (neither is a step the handler waits for).
  check("steps_kind_check", sql`${t.kind} in ('run', 'sleep', 'event', 'jobs', 'patch', 'version')`),
  check("steps_state_check", sql`${t.state} in ('done', 'retrying', 'failed', 'waiting', 'timed_out')`),
  // sendEvent finds the runs waiting for an event by this index; it holds only the waiting steps.
  index("steps_waiting_event_idx").on(t.event).where(sql`${t.state} = 'waiting' and ${t.kind} = 'event'`),
]);

/**
 * The child jobs a parked workflow waits for (`step.runJobs`, `step.invoke`), by child: the settle that ends
 * a child wakes its parent when no other child of it is left, instead of leaving it to its poll.
 */
export const childWaits = akadze.table("child_waits", {
  childId: bigint("child_id", { mode: "number" }).primaryKey(),
  parentId: bigint("parent_id", { mode: "number" }).notNull(),
}, (t) => [index("child_waits_parent_idx").on(t.parentId)]);
