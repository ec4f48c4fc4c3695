/**
 * akadze/testing: run an app's jobs inline in a test, on an in-memory PGlite or your database, with a
 * clock the test moves (see docs/testing.md).
 * @example
 * import { testApp } from "akadze/testing";
 * const t = await testApp(app);
 * await sendMail.using(t.db).enqueue({ userId: 7 });
 * await t.drain();
 * const [job] = await t.enqueued(sendMail); // job.args.userId, job.state === "succeeded"
 * await t.close();
 */
import * as v from "valibot";
import type { App } from "../app/app.js";
import type { ArgsSchema, Task } from "../app/task.js";
import type { DebouncedTask } from "../app/debounce.js";
import { InvalidInput } from "../core/errors.js";
import type { ErrorEntry } from "../core/errors.js";
import type { Duration } from "../core/duration.js";
import { jsonProblem } from "../core/json.js";
import { JOB_STATES, type JobState } from "../core/states.js";
import { iso } from "../core/time-text.js";
import { CountSchema, DurationRangeSchema, MAX_BATCH_SIZE, MAX_SLOTS, MAX_SPAN_MS, NameSchema, parseOrThrow } from "../core/validate.js";
import { queryJson, type Db } from "../db/query.js";
import { DEFAULT_BATCH_SIZE, runOnce } from "../runtime/run-once.js";
import { highestJobIdStatement } from "../sql/reads/jobs-since.js";
import { listJobsInOrderStatement } from "../sql/reads/list-jobs-in-order.js";
import { nextRunAtStatement } from "../sql/schedules/next-run-at.js";
import { timestamp } from "../sql/time.js";
import type { AppEventOptions, SentAppEvent } from "../app/events.js";
import { TestClock } from "./clock.js";
import { databaseAheadMs, openTestDatabase } from "./database.js";
import { addRun, DEFAULT_MAX_RUNS, emptyDrainSummary, endlessRunsError, type DrainSummary } from "./drain.js";

export { TestClock } from "./clock.js";
export { DEFAULT_MAX_RUNS, type DrainSummary } from "./drain.js";

/** Jobs one test run runs at once unless told: one, so they run in the order a worker would claim them. @example await testApp(app, { slots: DEFAULT_TEST_SLOTS * 8 }) */
export const DEFAULT_TEST_SLOTS = 1;

/** Options of `testApp`. @example await testApp(app, { db, maxRuns: 500 }) */
export interface TestAppOptions {
  /** Your database (akadze's schema migrated; it stays open on `close()`). Default: a fresh in-memory PGlite with akadze's schema. */
  db?: Db;
  /** Jobs run at once in each run. Default 1 (claim order, one at a time). */
  slots?: number;
  /** Jobs each run claims. Default 50. */
  batchSize?: number;
  /** The runs a `drain` or `runUntilIdle` makes before it calls the work endless. Default 100. */
  maxRuns?: number;
}

/** A job as a test reads it; `A` and `R` are its task's args and result. @example const [job]: TestJob<{ userId: number }>[] = await t.enqueued(sendMail); */
export interface TestJob<A = unknown, R = unknown> {
  id: number;
  task: string;
  queue: string;
  state: JobState;
  args: A;
  attempt: number;
  maxAttempts: number;
  priority: number;
  runAt: string;
  createdAt: string;
  finishedAt: string | null;
  /** What the handler returned, once the job succeeded. */
  result: R | null;
  errors: ErrorEntry[];
}

/** Which jobs `enqueued` and `jobs` return: every field given must match. @example await t.jobs({ state: ["queued", "running"], args: { userId: 7 } }) */
export interface TestJobFilter<A = unknown> {
  /** One state or any of several. */
  state?: JobState | JobState[];
  queue?: string;
  /** The args contain these (a partial object matches, as Postgres' `@>`). */
  args?: Partial<A>;
}

const StateSchema = v.picklist(JOB_STATES, `state must be one of ${JOB_STATES.join(", ")}`);
const FilterSchema = v.strictObject({
  state: v.optional(v.union([StateSchema, v.pipe(v.array(StateSchema), v.minLength(1, "give at least one state"))], `state must be one of ${JOB_STATES.join(", ")}, or a list of them`)),
  queue: v.optional(NameSchema),
  task: v.optional(NameSchema),
  args: v.optional(v.unknown()),
});
const OptionsSchema = v.strictObject({
  db: v.optional(v.custom<Db>((db) => typeof (db as Db)?.execute === "function", "db must be a drizzle database")),
  slots: v.optional(CountSchema("slots", MAX_SLOTS)),
  batchSize: v.optional(CountSchema("batchSize", MAX_BATCH_SIZE)),
  maxRuns: v.optional(CountSchema("maxRuns", 1_000_000)),
});
const MaxAdvanceSchema = DurationRangeSchema("maxAdvance", 0, MAX_SPAN_MS);

/**
 * Runs an app's jobs in a test: `drain()` runs every job due on the test's clock, `clock.advance()` brings
 * delayed jobs, retries and workflow sleeps due, `sendEvent()` wakes a waiting step, `enqueued(task)` reads
 * what was enqueued, typed by the task. Without `db`, on a fresh in-memory PGlite.
 * @example const t = await testApp(app); try { ... } finally { await t.close(); }
 */
export async function testApp(app: App, options: TestAppOptions = {}): Promise<TestApp> {
  if (typeof app?.taskByName !== "function") throw new InvalidInput("testApp: give the app (what createApp returns)");
  const o = parseOrThrow(OptionsSchema, options, "testApp options");
  const slots = o.slots ?? DEFAULT_TEST_SLOTS;
  const batchSize = o.batchSize ?? DEFAULT_BATCH_SIZE;
  const database = await openTestDatabase(o.db);
  // An app without a clock enqueues at the database's now(): the test clock starts where that is (another
  // server's clock may run ahead), and 1 ms more, as Postgres keeps microseconds.
  const aheadMs = app.sqlClock === null && o.db !== undefined ? await databaseAheadMs(database.db) : 0;
  const clock = new TestClock(app.clock, aheadMs + 1);
  return new TestApp(app, database.db, clock, { slots, batchSize, maxRuns: o.maxRuns ?? DEFAULT_MAX_RUNS }, database.close);
}

/** A test's handle on an app: its database, its clock, and the calls that run and read its jobs. */
export class TestApp {
  private invocations = 0;
  private closed = false;

  /** @internal Made by `testApp`. */
  constructor(
    readonly app: App,
    /** The database the jobs live in: enqueue with `task.using(t.db)`. */
    readonly db: Db,
    /** The clock every run, event and wake-up of this test app reads. */
    readonly clock: TestClock,
    private readonly settings: { slots: number; batchSize: number; maxRuns: number },
    private readonly closeDatabase: () => Promise<void>,
  ) {}

  /**
   * Runs invocations (`runOnce`, one batch each, on the test clock) until one finds no job due; throws,
   * naming the tasks, if jobs are still coming after `maxRuns`. Returns what the runs did.
   * @example await t.drain(); await t.drain({ maxRuns: 1000 });
   */
  async drain(options: { maxRuns?: number } = {}): Promise<DrainSummary> {
    const maxRuns = this.maxRunsOf(options, "drain");
    const total = emptyDrainSummary();
    const mark = await this.mark();
    if (await this.drainInto(total, maxRuns)) return total;
    throw await endlessRunsError(this.db, "drain", maxRuns, mark, this.clock.now());
  }

  /**
   * Drains, then moves the clock to the next queued job's run time and drains again, until no job is
   * queued for later (or the next one lies past `maxAdvance` from the start). Wakes every sleep, backoff
   * and event timeout on its way; bounded by `maxRuns` in all.
   * @example await t.runUntilIdle(); await t.runUntilIdle({ maxAdvance: "1h" });
   */
  async runUntilIdle(options: { maxRuns?: number; maxAdvance?: Duration } = {}): Promise<DrainSummary> {
    const { maxAdvance, ...rest } = options;
    const maxRuns = this.maxRunsOf(rest, "runUntilIdle");
    const limitMs = maxAdvance === undefined ? Infinity : parseOrThrow(MaxAdvanceSchema, maxAdvance, "runUntilIdle maxAdvance");
    const total = emptyDrainSummary();
    const mark = await this.mark();
    const startMs = this.clock.now().getTime();
    // Each pass moves the clock past a run time; bounded even when no pass claims (jobs held by a limit).
    for (let pass = 0; pass <= maxRuns; pass++) {
      if (!(await this.drainInto(total, maxRuns))) break;
      const { at } = await queryJson<{ at: string | null }>(this.db, nextRunAtStatement(timestamp(this.clock.now())));
      if (at === null || new Date(at).getTime() - startMs > limitMs) return total;
      if (total.runs >= maxRuns) break;
      const before = this.clock.advancedMs;
      this.clock.advanceTo(new Date(at));
      total.advancedMs += this.clock.advancedMs - before;
    }
    throw await endlessRunsError(this.db, "runUntilIdle", maxRuns, mark, this.clock.now());
  }

  /**
   * The jobs of `task` in the order they were enqueued, whatever their state (finished ones too), with
   * args and result typed by the task (a debounced task's args: the payloads its job coalesced).
   * @example const jobs = await t.enqueued(sendMail, { state: "queued", args: { userId: 7 } });
   */
  async enqueued<S extends ArgsSchema, R>(task: Task<S, R>, filter?: TestJobFilter<v.InferInput<S>>): Promise<TestJob<v.InferInput<S>, R>[]>;
  async enqueued<S extends ArgsSchema>(task: DebouncedTask<S>, filter?: TestJobFilter<v.InferInput<S>[]>): Promise<TestJob<v.InferInput<S>[]>[]>;
  async enqueued(task: Task | DebouncedTask, filter: TestJobFilter = {}): Promise<TestJob[]> {
    const name = (task as { name?: unknown })?.name;
    if (typeof name !== "string" || this.app.tasks.get(name) !== task.definition) {
      throw new InvalidInput(`enqueued: give a task of this app (what app.task, app.workflow or app.debounced returned)${typeof name === "string" ? `; ${JSON.stringify(name)} is not one` : ""}`);
    }
    return this.jobs({ ...filter, task: name });
  }

  /** Every job, oldest first, optionally of one task, queue and state. @example const failed = await t.jobs({ state: "failed" }); */
  async jobs(filter: TestJobFilter & { task?: string } = {}): Promise<TestJob[]> {
    this.assertOpen();
    const f = parseOrThrow(FilterSchema, filter, "job filter");
    if (f.args !== undefined) {
      const problem = f.args === null || typeof f.args !== "object" ? "it must be an object or an array" : jsonProblem(f.args, "args");
      if (problem !== null) throw new InvalidInput(`Invalid job filter: args must be JSON to match against the jobs' args: ${problem}`);
    }
    const states = f.state === undefined ? undefined : Array.isArray(f.state) ? f.state : [f.state];
    const rows = await queryJson<TestJob[]>(this.db, listJobsInOrderStatement({ task: f.task, queue: f.queue, states, argsContain: f.args }));
    return rows.map((row) => ({
      id: Number(row.id), task: row.task, queue: row.queue, state: row.state, args: row.args, attempt: row.attempt, maxAttempts: row.maxAttempts,
      priority: row.priority, runAt: iso(row.runAt)!, createdAt: iso(row.createdAt)!, finishedAt: iso(row.finishedAt), result: row.result, errors: row.errors,
    }));
  }

  /**
   * `app.sendEvent` at the test clock's now: enqueues the tasks subscribed to the event (`app.on`), delivers it
   * to the steps waiting for it and makes their runs due (run them with `drain()`).
   * @example await t.sendEvent("order.shipped", { orderId: 7 }); await t.drain();
   */
  async sendEvent(name: string, payload: unknown, options: { id?: string } = {}): Promise<SentAppEvent> {
    this.assertOpen();
    const send: AppEventOptions = { ...options, now: this.clock.now() };
    return this.app.sendEvent(this.db, name, payload, send);
  }

  /** Closes the in-memory database (your own `db` stays open). Safe to call twice. @example afterEach(() => t.close()); */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.closeDatabase();
  }

  /** `await using t = await testApp(app)` closes it at the end of the block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Runs one-batch invocations into `total` until one claims nothing (true) or `total.runs` reaches `maxRuns` (false). */
  private async drainInto(total: DrainSummary, maxRuns: number): Promise<boolean> {
    while (total.runs < maxRuns) {
      const run = await runOnce(this.app, {
        db: this.db, now: this.clock.now, slots: this.settings.slots, batchSize: this.settings.batchSize, id: `test-${++this.invocations}`,
        // One batch per run, so runs can be counted; no budget, so every task's timeout fits; nothing pruned
        // or registered, so the test reads every job it made and nothing else.
        drain: false, budget: Infinity, retention: false, register: false,
      });
      addRun(total, run);
      if (run.claimed === 0) return true;
    }
    // The last run may have taken the last due job: then the work did end. (The earliest queued run time at
    // all, in an unpaused queue; a job due but held by its limit counts as work left.)
    const { at } = await queryJson<{ at: string | null }>(this.db, nextRunAtStatement(timestamp(new Date(0))));
    return at === null || new Date(at).getTime() > this.clock.now().getTime();
  }

  private assertOpen(): void {
    if (this.closed) throw new InvalidInput("this test app is closed: make another with testApp(app)");
  }

  private maxRunsOf(options: { maxRuns?: number }, what: string): number {
    this.assertOpen();
    const { maxRuns } = parseOrThrow(v.strictObject({ maxRuns: v.optional(CountSchema("maxRuns", 1_000_000)) }), options, `${what} options`);
    return maxRuns ?? this.settings.maxRuns;
  }

  /** The highest job id now: the jobs after it are the ones this drain saw enqueued. */
  private async mark(): Promise<number> {
    return Number((await queryJson<{ id: number | string }>(this.db, highestJobIdStatement())).id);
  }
}
