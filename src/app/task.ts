import * as v from "valibot";
import { is, SQL, sql } from "drizzle-orm";
import type { BackoffPolicy } from "../core/backoff.js";
import { resolveRetryPolicy, type RetryPolicy } from "../core/retry-policy.js";
import type { Duration } from "../core/duration.js";
import { DuplicateJob, InvalidInput, isUniqueKeyViolation } from "../core/errors.js";
import { queryJson, type BatchItem, type Db } from "../db/query.js";
import { insertJobsStatement, type JobBatch } from "../sql/enqueue.js";
import { storedFairKey } from "../core/fair-key.js";
import type { TraceCarrier, Tracing } from "../core/tracing.js";
import {
  assertStorableJson, describeIssues, inTimestampRange, NameSchema, parseEnqueueOptions, parseOrThrow, TaskOptionsSchema, type EnqueueOptions,
} from "../core/validate.js";

/** The queue of a task that names none. @example app.task("t", async () => {}); // queue "default" */
export const DEFAULT_QUEUE = "default";
/** The attempt budget of a task that sets none, including the first run. @example app.task("sms", { maxAttempts: 1 }, send); // never twice */
export const DEFAULT_MAX_ATTEMPTS = 3;

/** What a task body sees of its job. @example app.task("t", async (_args, job: JobContext) => { if (job.signal.aborted) return; }); */
export interface JobContext {
  id: number;
  task: string;
  queue: string;
  /** 1 on the first run. */
  attempt: number;
  maxAttempts: number;
  /** The id of the invocation or worker lane running it (its lease owner), e.g. for logs. */
  invocation: string;
  /** Aborts on timeout, on a cancel request seen by the heartbeat, and when the lease is lost. */
  signal: AbortSignal;
  /**
   * The database this run claimed the job from (the invocation's or the worker's), for the body's own reads
   * and writes. What it writes commits on its own, whatever the job's outcome: to commit writes together with
   * the job's success, use `current().completeTx` or `completeBatch`.
   * @example app.task("report.build", async ({ id }, job) => { await job.db.update(reports).set({ ready: true }).where(eq(reports.id, id)); });
   */
  db: Db;
  /**
   * Reports how far the job has got: a JSON value of at most 16 KiB, which `getJob`, the CLI, the dashboard and
   * the event stream of `akadze/hono` show. Coalesced: a tight loop of calls costs a few statements, and the last
   * value is written before the job's outcome. Throws `InvalidInput` for a value that is not JSON or too large.
   * @example app.task("import", async ({ rows }, job) => { for (let i = 0; i < rows.length; i++) { await load(rows[i]); job.progress({ done: i + 1, of: rows.length }); } });
   */
  progress(value: unknown): void;
  /**
   * Adds a line to the job's log, kept with the job and this attempt (200 lines and 64 KiB per job at most, the
   * rest counted as dropped); parts are joined by spaces, non-strings as JSON. Written coalesced like `progress`.
   * @example job.log("fetched", rows.length, "rows");
   */
  log(...parts: unknown[]): void;
}

export type ArgsSchema = v.GenericSchema<any, any>;

/** A task's options; every one has a default. @example app.task("mail.send", { queue: "mail", maxAttempts: 6, timeout: "60s" }, send); */
export interface TaskOptions<S extends ArgsSchema = ArgsSchema> {
  /** Valibot schema of the args, checked at enqueue and again at run time. Default `v.object({})`. */
  args?: S;
  /** Default `"default"`. */
  queue?: string;
  /** Attempt budget including the first run. Default 3. */
  maxAttempts?: number;
  /** The run is an error (and `job.signal` aborts) past this. Default: the invocation's remaining budget. */
  timeout?: Duration;
  /**
   * Retry delay per failed attempt: a function of the attempt, or a declarative `RetryPolicy` (which may
   * also set `maxAttempts` and filter errors). Default 2^(attempt-1) s up to 300 s with jitter.
   */
  backoff?: BackoffPolicy | RetryPolicy;
  /** Only errors it accepts are retried; others fail the job at once. With a `RetryPolicy`'s `retryOn`, both must accept. */
  retryOn?: (error: unknown) => boolean;
  /** Default priority of this task's jobs (smallint, higher first). */
  priority?: number;
  /**
   * Opt-in bound for jobs enqueued with a `limitKey`: once due, a job held back by its limit for longer
   * than this ends `rate_limited` instead of waiting on. Default: no bound (it waits in `queued`).
   */
  limitWait?: Duration;
}

/**
 * A task body: validated args and the job context; what it returns (`R`, JSON) is the job's result, and
 * `R` is what `getJob(db, id, task)` and `step.invoke` give back.
 * @example const handler: Handler<typeof Args> = async ({ userId }, job) => ({ userId, attempt: job.attempt });
 */
export type Handler<S extends ArgsSchema, R = unknown> = (args: v.InferOutput<S>, job: JobContext) => R | Promise<R>;

/** A registered task, resolved with its defaults; `R` is its handler's result. */
export interface TaskDefinition<R = unknown> {
  name: string;
  schema: ArgsSchema;
  queue: string;
  maxAttempts: number;
  timeoutMs: number | undefined;
  backoff: BackoffPolicy | undefined;
  retryOn: ((error: unknown) => boolean) | undefined;
  priority: number;
  limitWaitMs: number | undefined;
  handler: Handler<any, R>;
  /** A batch task's batching (`app.batchTask`): its jobs' bodies share handler calls. */
  batch?: BatchDefinition;
}

/**
 * A batch task's batching, resolved (batch.ts checks it; here so that a task's definition does not import the
 * kind of task built on it): how many jobs one handler call takes, how long the first waits, and the handler,
 * whose answer batch.ts's `outcomesOf` reads.
 */
export interface BatchDefinition {
  maxBatch: number;
  maxWaitMs: number;
  handler: (jobs: (JobContext & { args: any })[]) => unknown;
}

const EMPTY_ARGS = v.object({});

/** Validates a task's name, options and handler (throws InvalidInput) and applies the defaults. */
export function defineTask<S extends ArgsSchema, R>(name: string, options: TaskOptions<S>, handler: Handler<S, R>): TaskDefinition<R> {
  parseOrThrow(NameSchema, name, "task name");
  if (typeof handler !== "function") throw new InvalidInput(`task ${name}: the handler must be a function`);
  const o = parseOrThrow(TaskOptionsSchema, options, `options of task ${name}`);
  const retry = resolveRetry(name, options);
  const maxAttempts = o.maxAttempts ?? retry.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  return {
    name,
    schema: options.args ?? EMPTY_ARGS,
    queue: o.queue ?? DEFAULT_QUEUE,
    maxAttempts,
    timeoutMs: o.timeout,
    backoff: retry.backoff,
    retryOn: retry.retryOn,
    priority: o.priority ?? 0,
    limitWaitMs: o.limitWait,
    handler,
  };
}

/** The task's backoff and error filter, from a function or a declarative policy composed with `retryOn`. */
function resolveRetry(name: string, options: TaskOptions<any>): { backoff?: BackoffPolicy; retryOn?: (error: unknown) => boolean; maxAttempts?: number } {
  // (TaskOptionsSchema has checked that backoff is a function or an object, and retryOn a function.)
  const { backoff, retryOn } = options;
  if (backoff === undefined || typeof backoff === "function") return { backoff, retryOn };
  let policy;
  try {
    policy = resolveRetryPolicy(backoff);
  } catch (error) {
    throw new InvalidInput(`task ${name}: invalid backoff policy: ${(error as Error).message}`, { cause: error });
  }
  if (policy.maxAttempts !== undefined && options.maxAttempts !== undefined && policy.maxAttempts !== options.maxAttempts) {
    throw new InvalidInput(`task ${name}: maxAttempts is ${options.maxAttempts} but its backoff policy says ${policy.maxAttempts}: give it once`);
  }
  const own = policy.retryOn;
  const both = own && retryOn ? (error: unknown) => own(error) && retryOn(error) : own ?? retryOn;
  return { backoff: policy.backoff, retryOn: both, maxAttempts: policy.maxAttempts };
}

/** Enqueue operations bound to a database or transaction and a set of options. @example const ids = await sendMail.using(db).enqueueMany([{ userId: 1 }, { userId: 2 }]); */
export interface Enqueuer<S extends ArgsSchema> {
  /** Inserts one job in the caller's database or transaction; resolves to its id. */
  enqueue(args: v.InferInput<S>): Promise<number>;
  /** Inserts many jobs in one statement; resolves to their ids in order. */
  enqueueMany(args: Iterable<v.InferInput<S>>): Promise<number[]>;
  /** The same insert as a query for `db.batch([...])` (neon-http has no interactive transactions). */
  enqueueQuery(args: v.InferInput<S>): BatchItem;
  /**
   * The same, with some args computed by the database as the statement runs (`sqlArgs`: a key and an SQL
   * expression each, stored as its JSON value): a job can carry an id that an earlier statement of the same
   * batch created, e.g. `currval('orders_id_seq')` or a subquery. Those keys are checked against the schema
   * when the job runs; the rest now.
   * @example db.batch([db.insert(orders).values(o), charge.using(db).enqueueQuery({ payment: "ok" }, { orderId: sql`currval('orders_id_seq')` })])
   */
  enqueueQuery<K extends string & keyof v.InferInput<S>>(args: Omit<v.InferInput<S>, K>, sqlArgs: Record<K, SQL>): BatchItem;
}

/**
 * A task handle: `using(db, options)` enqueues it. `S` is its args' schema, `R` what its handler returns
 * (inferred by `app.task`), read back typed by `getJob(db, id, task)` and `step.invoke`.
 * @example await sendMail.using(tx, { delay: "30s" }).enqueue({ userId: 7 });
 */
export class Task<S extends ArgsSchema = ArgsSchema, R = unknown> {
  /**
   * `clock`: the app's test clock, or null: a delay then counts from the database's `now()`, not this host's.
   * `tracing`: the app's, whose active trace context each enqueue stores with its jobs; null: the app does not trace.
   */
  constructor(readonly definition: TaskDefinition<R>, private readonly clock: (() => Date) | null, private readonly tracing: Tracing | null = null) {}

  /** The task's registered name. @example sendMail.name // "mail.send" */
  get name(): string { return this.definition.name; }

  /** Binds enqueueing to `db` (a database or a transaction) and options. @example await sendMail.using(tx, { delay: "30s" }).enqueue({ userId: 7 }); */
  using(db: Db, options?: EnqueueOptions): Enqueuer<S> {
    const statementFor = (list: unknown[], computed?: Record<string, SQL>) => {
      const batch = buildJobBatch(this.definition, list, options, this.clock?.() ?? null, computedKeys(this.definition.name, list[0], computed),
        this.tracing?.capture() ?? null);
      return insertJobsStatement(batch, list.map((a) => a ?? {}), computed && computedArgs(computed));
    };
    return {
      enqueue: async (args) => (await insertRows(db, statementFor([args]), options?.uniqueKey))[0],
      enqueueMany: async (args) => {
        const list = [...args];
        const statement = statementFor(list); // validates even an empty list's options
        return list.length === 0 ? [] : insertRows(db, statement, options?.uniqueKey);
      },
      enqueueQuery: (args: unknown, sqlArgs?: Record<string, SQL>) => db.execute(statementFor([args], sqlArgs)),
    } as Enqueuer<S>;
  }
}

/**
 * Validates the options and every args; throws InvalidInput before anything is written. `now` is a test
 * clock, or null: the statement then adds the delay to the database's clock. `traceContext`: where the jobs
 * are enqueued, stored with them (null: untraced).
 */
export function buildJobBatch(task: TaskDefinition, list: unknown[], options: EnqueueOptions | undefined, now: Date | null, computed: readonly string[] = [],
  traceContext: TraceCarrier | null = null): JobBatch {
  const parsed = parseEnqueueOptions(options);
  if (parsed.uniqueKey !== undefined && list.length > 1) {
    // Every job of one call shares its options: the second job would clash with the first, not with an earlier one.
    throw new InvalidInput(`Invalid enqueue options: uniqueKey ${JSON.stringify(parsed.uniqueKey)} would be shared by all ${list.length} jobs ` +
      "of this enqueueMany call, and a key belongs to one active job: enqueue them one by one, each with its own key");
  }
  list.forEach((args, i) => {
    if (computed.length > 0) checkAllButComputed(task, args, computed);
    else parseOrThrow(task.schema, args, `args for task ${task.name}`);
    assertStorableJson(args ?? {}, list.length === 1 ? "args" : `args[${i}]`, `args for task ${task.name}`);
  });
  const delayMs = parsed.delay ?? 0;
  const runAt = parsed.runAt ?? (now === null ? null : new Date(now.getTime() + delayMs));
  const runAtMs = runAt?.getTime() ?? Date.now() + delayMs;
  if (!inTimestampRange(runAtMs)) {
    throw new InvalidInput(`Invalid enqueue options: the run time (the clock's now plus delay) must lie between 1970 and 9999; got ${runAtMs} ms`);
  }
  return {
    task: task.name,
    queue: parsed.queue ?? task.queue,
    priority: parsed.priority ?? task.priority,
    maxAttempts: task.maxAttempts,
    runAt,
    delayMs,
    expiresAt: parsed.expiresAt ?? null,
    uniqueKey: parsed.uniqueKey ?? null,
    limitKey: parsed.limitKey ?? null,
    limitWaitMs: parsed.limitKey === undefined ? null : parsed.limitWait ?? task.limitWaitMs ?? null,
    fairKey: storedFairKey(parsed.fairKey ?? null, parsed.fairSubKey ?? null),
    traceContext,
  };
}

/** The keys of `sqlArgs`, checked: SQL values, on object args that do not give the same keys. */
function computedKeys(task: string, args: unknown, sqlArgs: Record<string, SQL> | undefined): string[] {
  if (sqlArgs === undefined) return [];
  const what = `sqlArgs of enqueueQuery for task ${task}`;
  if (sqlArgs === null || typeof sqlArgs !== "object" || Array.isArray(sqlArgs)) throw new InvalidInput(`Invalid ${what}: expected an object of keys and sql\`...\` expressions`);
  const keys = Object.keys(sqlArgs);
  if (keys.length === 0) throw new InvalidInput(`Invalid ${what}: it names no key; leave it out instead`);
  for (const key of keys) {
    if (!is(sqlArgs[key], SQL)) throw new InvalidInput(`Invalid ${what}: ${key} must be an sql\`...\` expression from drizzle-orm`);
  }
  if (args !== undefined && (args === null || typeof args !== "object" || Array.isArray(args))) {
    throw new InvalidInput(`Invalid ${what}: the args it adds to must be an object`);
  }
  const twice = keys.filter((key) => Object.hasOwn((args ?? {}) as object, key));
  if (twice.length > 0) throw new InvalidInput(`Invalid ${what}: ${twice.join(", ")} given both in args and in sqlArgs`);
  return keys;
}

/** Validates args without the computed keys: issues about those keys wait for the run-time check. */
function checkAllButComputed(task: TaskDefinition, args: unknown, computed: readonly string[]): void {
  const result = v.safeParse(task.schema, args ?? {});
  const left = result.success ? [] : result.issues.filter((issue) => !computed.includes(String(issue.path?.[0]?.key)));
  if (left.length > 0) throw new InvalidInput(`Invalid args for task ${task.name}: ${describeIssues(left)}`, { cause: left });
}

/** One jsonb object of the computed args, each expression's value as JSON. */
function computedArgs(sqlArgs: Record<string, SQL>): SQL {
  return sql`jsonb_build_object(${sql.join(Object.entries(sqlArgs).map(([key, value]) => sql`${key}::text, ${value}`), sql`, `)})`;
}

async function insertRows(db: Db, statement: SQL, uniqueKey: string | undefined): Promise<number[]> {
  try {
    return (await queryJson<number[]>(db, statement)).map(Number);
  } catch (error) {
    if (isUniqueKeyViolation(error)) throw new DuplicateJob(uniqueKey ?? "?", { cause: error });
    throw error;
  }
}
