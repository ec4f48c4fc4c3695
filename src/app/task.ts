import * as v from "valibot";
import { is, SQL, sql } from "drizzle-orm";
import { DuplicateJob, InvalidInput, isUniqueKeyViolation } from "../core/errors.js";
import { queryJsonPrepared, type BatchItem, type Db } from "../db/query.js";
import { insertJobsStatement, type JobBatch } from "../sql/enqueue/enqueue.js";
import { storedFairKey } from "../core/fair-key.js";
import type { TraceCarrier, Tracing } from "../core/tracing.js";
import { assertStorableJson, describeIssues, inTimestampRange, parseEnqueueOptions, parseOrThrow, type EnqueueOptions } from "../core/validate.js";
import type { ArgsSchema, TaskDefinition } from "./task-definition.js";

// The task handle: a task as declared (task-definition.ts, re-exported here) bound to a database to enqueue it.
export * from "./task-definition.js";

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

/**
 * Runs an enqueue's insert, prepared where the driver keeps statements (its texts are a few fixed shapes, with
 * no caller's SQL in them): an enqueue into a node-postgres pool then skips parsing and planning, 0.6 ms of an
 * idle worker's 5 ms from enqueue to start on this machine.
 */
async function insertRows(db: Db, statement: SQL, uniqueKey: string | undefined): Promise<number[]> {
  try {
    return (await queryJsonPrepared<number[]>(db, statement)).map(Number);
  } catch (error) {
    if (isUniqueKeyViolation(error)) throw new DuplicateJob(uniqueKey ?? "?", { cause: error });
    throw error;
  }
}
