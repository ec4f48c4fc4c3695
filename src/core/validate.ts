// What akadze accepts from its callers, in one place: every public entry (enqueue, task and schedule
// definitions, runOnce, runWorker, akadzeRoutes, limits, retention, control by job id) validates here,
// so bad input is an InvalidInput naming the field before anything is written or claimed.
import * as v from "valibot";
import { DurationSchema, tryParseDuration, type Duration } from "./duration.js";
import { InvalidInput } from "./errors.js";
import { jsonProblem, textProblem } from "./json.js";
import { fairKeyProblem } from "./fair-key.js";

/** Task, schedule, queue, limit-key, unique-key and worker-id names are at most this long. @example app.task("t".repeat(MAX_NAME_LENGTH), handler); // the longest name */
export const MAX_NAME_LENGTH = 200;
/** Timestamps akadze stores (runAt, expiresAt, the clock's now) lie in [1970-01-01, 9999-12-31] UTC. */
export const EARLIEST_TIMESTAMP_MS = Date.UTC(1970, 0, 1);
export const LATEST_TIMESTAMP_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
/** The longest delay (an enqueue's, or a Retry's or Snooze's, clamped to it), retention age or schedule period: 100 years. */
export const MAX_SPAN_MS = 100 * 365 * 86_400_000;
/** The longest timer JavaScript runtimes keep (2^31 - 1 ms, ~24.8 days): a task timeout, heartbeat or poll beyond it would fire at once. */
export const MAX_TIMER_MS = 2_147_483_647;
/** Priorities are a Postgres smallint. */
export const MIN_PRIORITY = -32768;
export const MAX_PRIORITY = 32767;
/** maxAttempts is a Postgres integer; one below its top so a requeue's extra attempt still fits. */
export const MAX_ATTEMPTS_BOUND = 2_147_483_646;
/** A lease shorter than a second expires between a claim and its first heartbeat; longer than a day hides a dead invocation for too long. */
export const MIN_LEASE_MS = 1_000;
export const MAX_LEASE_MS = 86_400_000;
/** A heartbeat more often than this only loads the database. */
export const MIN_HEARTBEAT_MS = 10;
/** Upper bounds that keep one call from asking for an absurd invocation. */
export const MAX_SLOTS = 1_000;
export const MAX_BATCH_SIZE = 10_000;
/** maxRunning and maxStarts are each stored as that many rows (slots, tokens) that claims walk: at most 10,000. @example await setLimit(db, "vendor", { maxRunning: MAX_LIMIT_COUNT }); */
export const MAX_LIMIT_COUNT = 10_000;
/** A maxStarts window is at most a year. */
export const MAX_LIMIT_WINDOW_MS = 365 * 86_400_000;
/** Rows one invocation prunes per kind, at most. */
export const MAX_RETENTION_BATCH = 100_000;

/** Runs a valibot schema; on failure throws InvalidInput listing each issue with its path. @example parseOrThrow(JobIdSchema, 42, "job id") */
export function parseOrThrow<S extends v.GenericSchema>(schema: S, input: unknown, what: string): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  throw new InvalidInput(`Invalid ${what}: ${describeIssues(result.issues)}`, { cause: result.issues });
}

/** One problem with an input: its dot path (null for the input itself) and message. */
export interface InputIssue { path: string | null; message: string }
/** Valibot's issues with their dot paths, as the routes' 400 bodies list them. @example issueList(result.issues) */
export function issueList(issues: readonly v.BaseIssue<unknown>[]): InputIssue[] {
  return issues.map((issue) => ({ path: v.getDotPath(issue), message: issue.message }));
}
/** The one sentence of every InvalidInput: `path: message` (no path where the message starts with it), joined by "; ". @example describeIssues(issues) // "queues.0: must not be empty; slots must be at least 1" */
export function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return issueList(issues).map(({ path, message }) => (path && !message.startsWith(`${path} `) ? `${path}: ${message}` : message)).join("; ");
}

/**
 * The one rule for names (tasks, schedules, queues, limit keys, unique keys, ids): non-empty text Postgres
 * can store, at most MAX_NAME_LENGTH characters. Messages leave the field to the issue's path.
 * @example parseOrThrow(NameSchema, "mail", "queue")
 */
export const NameSchema = v.pipe(
  v.string("must be a string"),
  v.minLength(1, "must not be empty"),
  v.maxLength(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`),
  v.check((s) => textProblem(s) === null, (issue) => textProblem(issue.input as string)!),
);

/** A job id: a positive safe integer (ids above 2^53 - 1 are refused, never rounded). @example parseOrThrow(JobIdSchema, 42, "job id") */
export const JobIdSchema = v.pipe(
  v.number("a job id must be a number"),
  v.safeInteger(`a job id must be a whole number no larger than ${Number.MAX_SAFE_INTEGER}`),
  v.minValue(1, "a job id must be positive"),
);

/** A whole number from 1 to `max` (slots, batch sizes, limits, page sizes). @example parseOrThrow(CountSchema("slots", MAX_SLOTS), 8, "slots") */
export const CountSchema = (what: string, max: number) => v.pipe(
  v.number(`${what} must be a number`), v.integer(`${what} must be a whole number`),
  v.minValue(1, `${what} must be at least 1`), v.maxValue(max, `${what} must be at most ${max}`),
);
/** A Duration in ms from `minMs` to `maxMs` (1 ms: "longer than zero"). @example parseOrThrow(DurationRangeSchema("window", 1, MAX_SPAN_MS), "15m", "window") */
export const DurationRangeSchema = (what: string, minMs: number, maxMs: number) => v.pipe(
  DurationSchema,
  v.minValue(minMs, minMs <= 1 ? `${what} must be longer than zero` : `${what} must be at least ${minMs} ms`),
  v.maxValue(maxMs, `${what} must be at most ${maxMs} ms`),
);
const Timestamp = (what: string) => v.pipe(
  v.date(`${what} must be a valid Date`),
  v.check((d) => inTimestampRange(d.getTime()), `${what} must lie between 1970-01-01 and 9999-12-31 (UTC)`),
);
const Fn = (what: string) => v.function(`${what} must be a function`);
const Priority = v.pipe(v.number("priority must be a number"), v.integer("priority must be an integer"),
  v.minValue(MIN_PRIORITY, `priority must be at least ${MIN_PRIORITY}`), v.maxValue(MAX_PRIORITY, `priority must be at most ${MAX_PRIORITY}`));
const Queues = v.pipe(v.array(NameSchema, "queues must be an array of names"),
  v.minLength(1, "give at least one queue, or leave queues out for every queue"));
const Db = v.custom((db) => typeof (db as { execute?: unknown } | null)?.execute === "function", "db must be a drizzle Postgres database or transaction");
const Signal = v.custom((s) => typeof (s as { aborted?: unknown } | null)?.aborted === "boolean", "signal must be an AbortSignal");

/** True for an instant akadze stores (see EARLIEST_TIMESTAMP_MS, LATEST_TIMESTAMP_MS). */
export function inTimestampRange(ms: number): boolean {
  return Number.isFinite(ms) && ms >= EARLIEST_TIMESTAMP_MS && ms <= LATEST_TIMESTAMP_MS;
}

/** Throws InvalidInput naming the first value under `path` that Postgres cannot store as jsonb. */
export function assertStorableJson(value: unknown, path: string, what: string): void {
  const problem = jsonProblem(value, path);
  if (problem) throw new InvalidInput(`Invalid ${what}: args must be JSON that Postgres can store; ${problem}`);
}

/** Options of one enqueue; they are stored on the job row and never mixed into its args. @example task.using(db, { delay: "30s", priority: 5, uniqueKey: "welcome-7" }) */
export interface EnqueueOptions {
  /** Run no sooner than this long from now (at most 100 years). */
  delay?: Duration;
  /** Run no sooner than this instant (1970 to 9999). */
  runAt?: Date;
  /** Cancel instead of running if not started by then. */
  expiresAt?: Date;
  /** Higher runs first; a Postgres smallint. */
  priority?: number;
  /** While a job with this key is queued or running, enqueueing another throws `DuplicateJob`. */
  uniqueKey?: string;
  /** The key `setLimit` limits are counted under. */
  limitKey?: string;
  /** With `limitKey`: once due, the job may be held back by its limit this long; then it ends `rate_limited`. Overrides the task's. */
  limitWait?: Duration;
  /** Overrides the task's queue. */
  queue?: string;
  /**
   * The fairness key (a tenant, a customer): claims share their batch across the keys with due jobs, so a
   * key's wait does not grow with another key's backlog (docs/flow-control.md#fairness).
   */
  fairKey?: string;
  /**
   * With `fairKey`: the key within the tenant (a repository, a project) the tenant's share is in turn shared
   * across, so one sub-key's backlog never holds back the tenant's others, and a tenant that spreads its backlog
   * over many sub-keys still gets one tenant's share (docs/flow-control.md#fairness).
   */
  fairSubKey?: string;
}

/** A fairness key or sub-key (enqueue options, `setFairWeight`): a name that cannot hold the characters that separate the two (sql/claim/fair.ts). */
export const FairNameSchema = v.pipe(NameSchema, v.check((s) => fairKeyProblem(s) === null, (issue) => fairKeyProblem(issue.input as string)!));

const EnqueueOptionsSchema = v.pipe(
  v.strictObject({
    delay: v.optional(DurationRangeSchema("delay", 0, MAX_SPAN_MS)),
    runAt: v.optional(Timestamp("runAt")),
    expiresAt: v.optional(Timestamp("expiresAt")),
    priority: v.optional(Priority),
    uniqueKey: v.optional(NameSchema),
    limitKey: v.optional(NameSchema),
    limitWait: v.optional(DurationRangeSchema("limitWait", 0, MAX_SPAN_MS)),
    queue: v.optional(NameSchema),
    fairKey: v.optional(FairNameSchema),
    fairSubKey: v.optional(FairNameSchema),
  }),
  v.check((o) => o.delay === undefined || o.runAt === undefined, "give delay or runAt, not both"),
  v.check((o) => o.limitWait === undefined || o.limitKey !== undefined, "limitWait bounds the wait for a limit: give it with a limitKey"),
  v.check((o) => o.fairSubKey === undefined || o.fairKey !== undefined, "fairSubKey is a key within a tenant: give it with a fairKey"),
);

export type ParsedEnqueueOptions = v.InferOutput<typeof EnqueueOptionsSchema>;

/** Validates enqueue options; throws InvalidInput with every problem in one sentence. @example parseEnqueueOptions({ delay: "30s" }).delay // 30000 */
export function parseEnqueueOptions(options: EnqueueOptions | undefined): ParsedEnqueueOptions {
  return parseOrThrow(EnqueueOptionsSchema, options ?? {}, "enqueue options");
}

const isSyncSchema = (s: unknown) => typeof s === "object" && s !== null && (s as v.GenericSchema).kind === "schema" && (s as v.GenericSchema).async === false;

/** An attempt budget, for a task or its retry policy. */
export const MaxAttemptsSchema = v.pipe(v.number("maxAttempts must be a number"), v.integer("maxAttempts must be an integer"),
  v.minValue(1, "maxAttempts must be at least 1"), v.maxValue(MAX_ATTEMPTS_BOUND, `maxAttempts must be at most ${MAX_ATTEMPTS_BOUND}`));

/** A task's options (`app.task`, `app.periodic`, `app.register`). */
export const TaskOptionsSchema = v.object({
  args: v.optional(v.custom(isSyncSchema, "args must be a synchronous valibot schema, e.g. v.object({ userId: v.number() })")),
  queue: v.optional(NameSchema),
  maxAttempts: v.optional(MaxAttemptsSchema),
  timeout: v.optional(DurationRangeSchema("timeout", 1, MAX_TIMER_MS)),
  limitWait: v.optional(DurationRangeSchema("limitWait", 0, MAX_SPAN_MS)),
  backoff: v.optional(v.custom((x) => typeof x === "function" || (typeof x === "object" && x !== null),
    "backoff must be a function of the attempt or a retry policy object")),
  retryOn: v.optional(Fn("retryOn")),
  priority: v.optional(Priority),
});

/** `setLimit` options: positive counts up to MAX_LIMIT_COUNT, a window up to MAX_LIMIT_WINDOW_MS; `null` removes one. */
export const LimitOptionsSchema = v.pipe(
  v.strictObject({
    maxStarts: v.optional(v.nullable(CountSchema("maxStarts", MAX_LIMIT_COUNT))),
    window: v.optional(v.nullable(DurationRangeSchema("window", 1, MAX_LIMIT_WINDOW_MS))),
    maxRunning: v.optional(v.nullable(CountSchema("maxRunning", MAX_LIMIT_COUNT))),
  }),
  v.check((o) => o.maxStarts !== undefined || o.maxRunning !== undefined || o.window !== undefined, "give maxStarts with window, or maxRunning"),
  v.check((o) => (o.maxStarts == null) === (o.window == null), "maxStarts and window go together"),
);

const RetentionOptionsSchema = v.strictObject({
  finished: v.optional(DurationRangeSchema("finished", 0, MAX_SPAN_MS)),
  failed: v.optional(v.nullable(DurationRangeSchema("failed", 0, MAX_SPAN_MS))),
  batch: v.optional(CountSchema("batch", MAX_RETENTION_BATCH)),
  keepSucceeded: v.optional(v.boolean("keepSucceeded must be true or false")),
});
/** A `retention` option: `false`, an age for succeeded and cancelled jobs, or `{ finished, failed, batch }`; parsed to `false` or the object in ms. */
export const RetentionSchema = v.union([
  v.literal(false),
  v.pipe(v.union([v.number(), v.string()]), v.transform((finished): v.InferInput<typeof RetentionOptionsSchema> => ({ finished })), RetentionOptionsSchema),
  RetentionOptionsSchema,
], "retention must be false, a Duration or { finished, failed, batch, keepSucceeded }");

const Budget = v.union([v.literal(Infinity), DurationRangeSchema("budget", 1, MAX_TIMER_MS)], "budget must be a Duration (at most 24.8 days) or Infinity");

const RunEntries = {
  db: Db,
  queues: v.optional(Queues),
  slots: v.optional(CountSchema("slots", MAX_SLOTS)),
  batchSize: v.optional(CountSchema("batchSize", MAX_BATCH_SIZE)),
  budget: v.optional(Budget),
  lease: v.optional(DurationRangeSchema("lease", MIN_LEASE_MS, MAX_LEASE_MS)),
  heartbeat: v.optional(DurationRangeSchema("heartbeat", MIN_HEARTBEAT_MS, MAX_TIMER_MS)),
  now: v.optional(Fn("now")),
  signal: v.optional(Signal),
  id: v.optional(NameSchema),
  retention: v.optional(RetentionSchema),
  register: v.optional(v.boolean("register must be true or false")),
  drain: v.optional(v.boolean("drain must be true or false")),
};
/** `runOnce` options; unknown keys are ignored, as TypeScript already flags them. */
export const RunOptionsSchema = v.object(RunEntries);


/** `runWorker` options. */
export const WorkerOptionsSchema = v.pipe(
  v.object({
    db: Db,
    queues: v.optional(Queues),
    slots: v.optional(CountSchema("slots", MAX_SLOTS)),
    prefetch: v.optional(CountSchema("prefetch", MAX_BATCH_SIZE)),
    listen: v.optional(v.boolean("listen must be true or false")),
    signal: v.optional(Signal),
    // Room for the ".N" each of its invocations appends.
    id: v.optional(v.pipe(NameSchema, v.maxLength(MAX_NAME_LENGTH - 20, `must be at most ${MAX_NAME_LENGTH - 20} characters`))),
    lease: RunEntries.lease,
    minPoll: v.optional(DurationRangeSchema("minPoll", 1, MAX_TIMER_MS)),
    maxPoll: v.optional(DurationRangeSchema("maxPoll", 1, MAX_TIMER_MS)),
    retention: RunEntries.retention,
    now: RunEntries.now,
    onError: v.optional(Fn("onError")),
    onStart: v.optional(Fn("onStart")),
    onInvocation: v.optional(Fn("onInvocation")),
  }),
  v.check((o) => o.minPoll === undefined || o.maxPoll === undefined || o.minPoll <= o.maxPoll, "minPoll must not exceed maxPoll"),
);


/** `akadzeRoutes` options. */
export const RoutesOptionsSchema = v.pipe(
  v.object({
    db: v.optional(Db),
    getDb: v.optional(Fn("getDb")),
    secret: v.optional(v.string("secret must be a string")),
    getSecret: v.optional(Fn("getSecret")),
    budget: v.optional(DurationRangeSchema("budget", 1, MAX_TIMER_MS)),
    maxBudget: v.optional(DurationRangeSchema("maxBudget", 1, MAX_TIMER_MS)),
    run: v.optional(v.object((({ db: _db, queues: _q, slots: _s, batchSize: _b, budget: _u, ...rest }) => rest)(RunEntries))),
    metrics: v.optional(Fn("metrics")),
    maxBodyBytes: v.optional(CountSchema("maxBodyBytes", MAX_TIMER_MS)),
    events: v.optional(v.strictObject({
      pollEvery: v.optional(DurationRangeSchema("events.pollEvery", 50, MAX_TIMER_MS)),
      maxPollEvery: v.optional(DurationRangeSchema("events.maxPollEvery", 50, MAX_TIMER_MS)),
      maxDuration: v.optional(DurationRangeSchema("events.maxDuration", 1, MAX_TIMER_MS)),
      now: v.optional(Fn("events.now")),
    })),
  }),
  v.check((o) => (o.db === undefined) !== (o.getDb === undefined), "give exactly one of db and getDb"),
  v.check((o) => o.secret !== undefined || o.getSecret !== undefined, "give secret or getSecret"),
);
