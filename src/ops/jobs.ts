import * as v from "valibot";
import { JOB_STATES, type JobState } from "../core/states.js";
import { CountSchema, JobIdSchema as JobId, NameSchema, parseOrThrow } from "../core/validate.js";
import { queryJson, type Db } from "../db/query.js";
import type { ErrorEntry } from "../core/errors.js";
import { getJobStatement } from "../sql/reads/get-job.js";
import { listJobsStatement } from "../sql/reads/list-jobs.js";
import { iso } from "../core/time-text.js";
import { splitFairKey } from "../core/fair-key.js";
import { readSteps, type WorkflowStep } from "../app/read-steps.js";
import type { ArgsSchema, Task } from "../app/task.js";
import { InvalidInput } from "../core/errors.js";
import type { TraceCarrier } from "../core/tracing.js";

/** `jobs list` shows this many jobs unless told otherwise. */
export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 1000;

/** A job as `jobs list` shows it. Timestamps are ISO strings. */
export interface JobSummary {
  id: number;
  task: string;
  queue: string;
  state: JobState;
  attempt: number;
  maxAttempts: number;
  priority: number;
  runAt: string;
  createdAt: string;
  finishedAt: string | null;
}

/** Everything about one job, for `jobs show`; `R`: its result's type, when read through its task (see `getJob`). */
export interface JobDetail<R = unknown> extends JobSummary {
  args: unknown;
  /** What the handler returned, once the job succeeded (JSON: null before, or for a result not kept). */
  result: R | null;
  errors: ErrorEntry[];
  expiresAt: string | null;
  startedAt: string | null;
  uniqueKey: string | null;
  limitKey: string | null;
  /** How long the job may be held back by its limit once due before it ends `rate_limited`; null: no bound. */
  limitWaitMs: number | null;
  /** The fairness key its claims were shared by (`EnqueueOptions.fairKey`, the tenant); null: none. */
  fairKey: string | null;
  /** The key within the tenant (`EnqueueOptions.fairSubKey`); null: none. */
  fairSubKey: string | null;
  leaseOwner: string | null;
  leaseExpiresAt: string | null;
  cancelRequested: boolean;
  /** The finished job this one replays (`replayJob`, `replayJobs`); null: it was enqueued. */
  replayOf: number | null;
  /** The last value the job reported with `job.progress(value)`; null before any. */
  progress: unknown;
  /** When that value was written. */
  progressAt: string | null;
  /** The job's log lines (`job.log(...)`) in order, across its attempts. */
  logs: JobLogLine[];
  /** Lines dropped because the job's log was full (200 lines or 64 KiB). */
  logsDropped: number;
  /** Where it was enqueued, when the app traces (docs/observe.md#tracing): its runs' spans link to it; null: untraced. */
  traceContext: TraceCarrier | null;
  /** A workflow's steps in order: results, errors, and what a parked run waits for (absent for a job without steps). */
  steps?: WorkflowStep[];
}

/** One line of a job's log. */
export interface JobLogLine {
  /** The attempt that wrote it. */
  attempt: number;
  at: string;
  message: string;
}

export interface JobFilter {
  state?: JobState;
  queue?: string;
  task?: string;
  /** Default 50, at most 1000. */
  limit?: number;
  /** Only jobs with a smaller id: the next page after a page whose last job had this id. */
  beforeId?: number;
}

const FilterSchema = v.strictObject({
  state: v.optional(v.picklist(JOB_STATES, `state must be one of ${JOB_STATES.join(", ")}`)),
  queue: v.optional(NameSchema),
  task: v.optional(NameSchema),
  limit: v.optional(CountSchema("limit", MAX_LIST_LIMIT)),
  beforeId: v.optional(v.pipe(v.number(), v.integer("beforeId must be an integer"), v.minValue(1, "beforeId must be at least 1"))),
});

/**
 * The newest jobs first, optionally of one state, queue and task.
 * @example const failed = await listJobs(db, { state: "failed", queue: "mail", limit: 20 });
 * const older = await listJobs(db, { state: "failed", limit: 20, beforeId: failed.at(-1)?.id });
 */
export async function listJobs(db: Db, filter: JobFilter = {}): Promise<JobSummary[]> {
  const f = parseOrThrow(FilterSchema, filter, "job filter");
  const rows = await queryJson<JobSummary[] | null>(db, listJobsStatement({ ...f, limit: f.limit ?? DEFAULT_LIST_LIMIT }));
  return (rows ?? []).map(summaryOf);
}

/**
 * One job with its args, result, errors history and timings; `null` for an unknown id. Given its task,
 * the result is typed as that task's handler returns it (InvalidInput if the job is another task's).
 * @example const job = await getJob(db, 42); console.log(job?.errors);
 * const report = await getJob(db, id, buildReport); report?.result?.url; // typed from buildReport's handler
 */
export async function getJob(db: Db, jobId: number): Promise<JobDetail | null>;
export async function getJob<R>(db: Db, jobId: number, task: Task<ArgsSchema, R>): Promise<JobDetail<R> | null>;
export async function getJob(db: Db, jobId: number, task?: Task): Promise<JobDetail | null> {
  const id = parseOrThrow(JobId, jobId, "job id");
  const row = await queryJson<JobRow | null>(db, getJobStatement(id));
  if (!row) return null;
  if (task && row.task !== task.name) throw new InvalidInput(`job ${id} is a ${JSON.stringify(row.task)} job, not ${JSON.stringify(task.name)}: read it with its own task, or without one`);
  const steps = await readSteps(db, id);
  return {
    ...summaryOf(row), args: row.args, result: row.result, errors: row.errors, startedAt: iso(row.startedAt),
    expiresAt: iso(row.expiresAt), uniqueKey: row.uniqueKey, limitKey: row.limitKey, limitWaitMs: row.limitWaitMs === null ? null : Number(row.limitWaitMs), ...splitFairKey(row.fairKey ?? null), leaseOwner: row.leaseOwner,
    leaseExpiresAt: iso(row.leaseExpiresAt), cancelRequested: row.cancelRequested, replayOf: row.replayOf == null ? null : Number(row.replayOf),
    progress: row.reported?.progress ?? null, progressAt: iso(row.reported?.progressAt ?? null),
    logs: (row.logs ?? []).map((l) => ({ attempt: l.attempt, at: iso(l.at)!, message: l.message })), logsDropped: row.reported?.logsDropped ?? 0,
    traceContext: row.traceContext ?? null,
    ...(steps.length > 0 ? { steps } : {}),
  };
}

/** What getJobStatement answers: the detail's fields as stored, with the reports still nested. */
type JobRow = Omit<JobDetail, "progress" | "progressAt" | "logs" | "logsDropped"> & {
  reported: { progress: unknown; progressAt: string | null; logsDropped: number } | null;
  logs: JobLogLine[] | null;
};

// jsonb sorts object keys and prints timestamps its own way: rebuild in a reading order, with ISO times.
function summaryOf(row: JobSummary): JobSummary {
  return {
    id: Number(row.id), task: row.task, queue: row.queue, state: row.state, attempt: row.attempt, maxAttempts: row.maxAttempts,
    priority: row.priority, runAt: iso(row.runAt)!, createdAt: iso(row.createdAt)!, finishedAt: iso(row.finishedAt),
  };
}
