/**
 * akadze: a job queue whose broker is your application's Postgres, for serverless and edge runtimes.
 * @example
 * import * as v from "valibot";
 * import { createApp, runOnce, migrate } from "akadze";
 * await migrate(db);
 * const app = createApp();
 * const sendMail = app.task("mail.send", { args: v.object({ userId: v.number() }) }, async ({ userId }) => {});
 * await sendMail.using(db).enqueue({ userId: 7 });
 * await runOnce(app, { db });
 */
export { App, createApp, type AppOptions } from "./app/app.js";
export { Task, type TaskOptions, type Handler, type JobContext, type Enqueuer, DEFAULT_QUEUE, DEFAULT_MAX_ATTEMPTS } from "./app/task.js";
export { BatchOutcomeMissing, MAX_BATCH_JOBS, DEFAULT_BATCH_WAIT, type BatchTaskOptions, type BatchJob, type BatchHandler, type BatchOutcomes } from "./app/batch.js";
export { DebouncedTask, type DebouncedOptions, type DebouncedHandler, type DebouncedEnqueuer, type DebouncedEnqueueOptions } from "./app/debounce.js";
export {
  type EnqueueOptions, MAX_NAME_LENGTH, EARLIEST_TIMESTAMP_MS, LATEST_TIMESTAMP_MS, MAX_SPAN_MS, MAX_TIMER_MS, MIN_PRIORITY, MAX_PRIORITY,
  MAX_ATTEMPTS_BOUND, MIN_LEASE_MS, MAX_LEASE_MS, MIN_HEARTBEAT_MS, MAX_SLOTS, MAX_BATCH_SIZE, MAX_LIMIT_COUNT, MAX_LIMIT_WINDOW_MS,
  MAX_RETENTION_BATCH,
} from "./core/validate.js";
export { MAX_CATCH_UP } from "./core/schedule-input.js";
export { MAX_JSON_DEPTH } from "./core/json.js";
export { Hooks, type Transition, type HookJob, type BeforeRunHook, type AfterRunHook, type TransitionHook } from "./app/hooks.js";
export { consoleLog, type LogRecord, type LogSink } from "./app/log.js";
export type { Tracing, TraceCarrier } from "./core/tracing.js";
export { type ErrorEntry, AkadzeError, Retry, Snooze, Fail, Cancel, DuplicateJob, DuplicateSchedule, InvalidInput, LeaseLost, ResultNotJson, JobTimeout } from "./core/errors.js";
export { parseDuration, type Duration } from "./core/duration.js";
export { defaultBackoffMs, type BackoffPolicy } from "./core/backoff.js";
export { RETRY_POLICY_DEFAULTS, type RetryPolicy, type ErrorClass } from "./core/retry-policy.js";
export { JOB_STATES, type JobState } from "./core/states.js";
export { runAtomically, jobIdsOf, type Db, type BatchItem } from "./db/query.js";
export { migrate } from "./migrate.js";
export { connect, disconnectAll, neonHttpDb, withPool, type ConnectEnv, type ConnectOptions, type ConnectDriver, type PoolDriver, type PoolOptions } from "./connect.js";
export { requestCancel, requeue, pauseQueue, resumeQueue, setLimit, deleteLimit, type LimitOptions, type Limit, type HooksOwner } from "./control.js";
export { current, CurrentJob } from "./runtime/context.js";
export { runOnce, type RunOnceOptions, type RunSummary, DEFAULT_SLOTS, DEFAULT_BATCH_SIZE, DEFAULT_BUDGET, DEFAULT_LEASE } from "./runtime/run-once.js";
export { DEFAULT_MAX_INVOCATIONS, fanOutScope, type FanOutOptions, type FanOutReport, type FanOutTicket, type SiblingRequest } from "./runtime/fan-out.js";
export { runWorker, type WorkerOptions, type WorkerSummary, DEFAULT_MIN_POLL, DEFAULT_MAX_POLL } from "./runtime/run-worker.js";
export { renderMetrics, PROMETHEUS_CONTENT_TYPE, METRICS_WINDOW } from "./ops/metrics.js";
export { pruneJobs, type PruneOptions } from "./ops/retention.js";
export { DEFAULT_RETENTION, RETENTION_BATCH, WORKERS_RETENTION, type Retention, type RetentionOptions } from "./core/retention.js";
export { listWorkers, type WorkerRow } from "./ops/workers.js";
export { LIVE_WITHIN } from "./sql/registry/worker-status.js";
export type { WorkerKind } from "./sql/registry/register-worker.js";
export { listJobs, getJob, type JobSummary, type JobDetail, type JobFilter, type JobLogLine } from "./ops/jobs.js";
export { cancelJobs, requeueJobs, type BulkControlOptions } from "./ops/bulk.js";
export { replayJob, replayJobs, type ReplayOptions, type ReplayJobsOptions } from "./ops/replay.js";
export { BULK_LIMIT, type JobSelection, type BulkOptions } from "./ops/job-selection.js";
export { waitForJob, WaitTimeout, DEFAULT_WAIT_POLL, MIN_WAIT_POLL_MS, type WaitForJobOptions } from "./ops/wait-for-job.js";
export { readJobProgress, type JobProgressLook } from "./ops/job-progress.js";
export { listQueues, type QueueRow } from "./ops/queues.js";
export { listLimits, type LimitRow } from "./ops/limits.js";
export { setFairWeight, listFairWeights, MAX_FAIR_WEIGHT, type FairWeight } from "./ops/fair-weights.js";
export { listSchedules, type ScheduleInfo } from "./ops/schedules.js";
export {
  createSchedule, updateSchedule, pauseSchedule, resumeSchedule, deleteSchedule,
  type RuntimeScheduleEntry, type ScheduleChange, type RuntimeSchedule, type ScheduleOptions, type PauseOptions,
} from "./ops/runtime-schedules.js";
export { FIRST_SIGHT_GRACE_MS } from "./schedules/enqueue.js";
export type { ScheduleTiming, ScheduleEntry, SchedulePolicy } from "./app/schedule.js";
export { sendEvent, sendEventQuery, type SendEventOptions } from "./workflow/events.js";
export type { SentEvent } from "./sql/enqueue/send-event.js";
export type { AppEventOptions, SentAppEvent } from "./app/events.js";
export { type Step, type StepContext, type StepName, type StepOptions, type WaitForEventOptions, type ChildJob, type ChildJobsOptions } from "./app/step.js";
export { type WorkflowOptions, type WorkflowHandler, DEFAULT_MIN_STEP_TIME } from "./app/workflow.js";
export { type StoredStep } from "./sql/workflow/load-steps.js";
export { type WorkflowStep } from "./app/read-steps.js";
export { OutcomeNotStorable, StepFailed, StepMisuse, StepParked, StepTimeout, WorkflowNondeterminism, WorkflowVersionMissing } from "./workflow/errors.js";
export { ChildJobFailed, DEFAULT_CHILD_POLL } from "./workflow/children.js";
