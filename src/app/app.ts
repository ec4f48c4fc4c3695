import { AkadzeError, InvalidInput } from "../core/errors.js";
import { defineSchedule, defineSchedules, type Schedule, type ScheduleEntry, type SchedulePolicy, type ScheduleTiming } from "./schedule.js";
import { DEFAULT_TRANSITION_HOOK_TIMEOUT, Hooks } from "./hooks.js";
import { tryParseDuration, type Duration } from "../core/duration.js";
import { defineWorkflow, type WorkflowDefinition, type WorkflowHandler, type WorkflowOptions } from "./workflow.js";
import { defineTask, Task, type ArgsSchema, type Handler, type TaskDefinition, type TaskOptions } from "./task.js";
import { batchDefinition, type BatchHandler, type BatchTaskOptions } from "./batch.js";
import { debounceTiming, DebouncedTask, type DebouncedHandler, type DebouncedOptions } from "./debounce.js";
import { sendAppEvent, sendAppEventQuery, Subscriptions, type AppEventOptions, type SentAppEvent } from "./events.js";
import type { BatchItem, Db } from "../db/query.js";
import * as v from "valibot";
import type { Tracing } from "../core/tracing.js";
import { consoleLog, type LogSink } from "./log.js";

/** Options of `createApp`. @example const app = createApp({ clock: () => new Date() }); */
export interface AppOptions {
  /** The clock every enqueue and invocation of this app reads (tests pass their own). Default: `new Date()`. */
  clock?: () => Date;
  /**
   * How long the `onTransition` hooks of one statement may take together (default "5s"): a hook still
   * running then is no longer waited for, its call is recorded as a `TransitionHookFailed` on its job,
   * and the statement commits without it, so no hook keeps jobs' row locks past this.
   */
  transitionHookTimeout?: Duration;
  /**
   * Traces the app's jobs: each enqueue stores the active trace context with its jobs, and every invocation's
   * claims, settles, runs and workflow steps are spans (docs/observe.md#tracing). Default: none, and nothing
   * of tracing is loaded or done.
   * @example import { openTelemetry } from "akadze/otel"; const app = createApp({ tracing: openTelemetry() });
   */
  tracing?: Tracing;
  /**
   * Where the app's log lines go: a hook or fan-out call that failed, a route's 500, each failed or retried
   * job of a handler. Default `consoleLog` (`akadze: <message>` on the console).
   * @example const records: LogRecord[] = []; const app = createApp({ log: (r) => records.push(r) });
   */
  log?: LogSink;
}

/**
 * The registry of tasks, schedules and hooks that invocations run.
 * @example
 * const app = createApp();
 * const ping = app.task("ping", async () => "pong");
 */
export class App {
  readonly tasks = new Map<string, TaskDefinition>();
  readonly hooks: Hooks;
  /** Schedules every invocation of this app checks, by name. */
  readonly schedules = new Map<string, Schedule>();
  readonly clock: () => Date;
  /** The clock statements use: the app's own when one was given, else `null` (the database's `now()`). */
  readonly sqlClock: (() => Date) | null;
  /** The app's tracing (`AppOptions.tracing`), or null: it does not trace. */
  readonly tracing: Tracing | null;
  /** Where the app logs (`AppOptions.log`). */
  readonly log: LogSink;
  /** The workflows declared (`workflow`), by task name: the runtime runs their jobs with steps, and their transitions carry steps. */
  readonly workflows = new Map<string, WorkflowDefinition>();
  /** The tasks each event starts (`on`). */
  private readonly subscriptions = new Subscriptions();

  constructor(options: AppOptions = {}) {
    const hookTimeoutMs = tryParseDuration(options.transitionHookTimeout ?? DEFAULT_TRANSITION_HOOK_TIMEOUT);
    if (hookTimeoutMs === undefined || hookTimeoutMs === 0) {
      throw new InvalidInput(`createApp: transitionHookTimeout must be a positive duration such as "5s", got ${JSON.stringify(options.transitionHookTimeout)}`);
    }
    this.hooks = new Hooks(hookTimeoutMs, (task) => this.workflows.has(task), () => this.clock());
    this.clock = options.clock ?? (() => new Date());
    this.sqlClock = options.clock ?? null;
    const tracing = options.tracing ?? null;
    if (tracing !== null && (typeof tracing !== "object" || typeof tracing.capture !== "function" || typeof tracing.engine !== "function")) {
      throw new InvalidInput("createApp: tracing must be what openTelemetry() from akadze/otel returns (an object with capture and engine)");
    }
    this.tracing = tracing;
    if (options.log !== undefined && typeof options.log !== "function") {
      throw new InvalidInput("createApp: log must be a function that takes a log record ({ level, message, fields })");
    }
    this.log = options.log ?? consoleLog;
  }

  /** Whether any workflow is declared: then settles wake a workflow parked on child jobs when the last one ends. */
  hasWorkflows(): boolean {
    return this.workflows.size > 0;
  }

  /** Declares a task: a name, optional options, and the handler. @example app.task("export.poll", async () => {}); */
  task<S extends ArgsSchema, R>(name: string, handler: Handler<S, R>): Task<S, R>;
  task<S extends ArgsSchema, R>(name: string, options: TaskOptions<S>, handler: Handler<S, R>): Task<S, R>;
  task<S extends ArgsSchema, R>(name: string, a: TaskOptions<S> | Handler<S, R>, b?: Handler<S, R>): Task<S, R> {
    const [options, handler] = typeof a === "function" ? [{}, a] : [a, b as Handler<S, R>];
    if (this.tasks.has(name)) throw new InvalidInput(`task ${name} is already registered`);
    const definition = defineTask(name, options as TaskOptions<S>, handler);
    this.tasks.set(name, definition);
    return new Task<S, R>(definition, this.sqlClock, this.tracing);
  }

  /**
   * Declares a workflow: a task whose handler gets `step`, whose results are stored and replayed, so one job
   * can sleep, wait for events and retry its parts across many invocations (see docs/workflows.md).
   * @example app.workflow("order.fulfil", { args: Order }, async ({ orderId }, step) => { await step.run("charge", () => charge(orderId)); });
   */
  workflow<S extends ArgsSchema, R>(name: string, handler: WorkflowHandler<S, R>): Task<S, R>;
  workflow<S extends ArgsSchema, R>(name: string, options: WorkflowOptions<S>, handler: WorkflowHandler<S, R>): Task<S, R>;
  workflow<S extends ArgsSchema, R>(name: string, a: WorkflowOptions<S> | WorkflowHandler<S, R>, b?: WorkflowHandler<S, R>): Task<S, R> {
    const [options, handler] = typeof a === "function" ? [{}, a] : [a ?? {}, b as WorkflowHandler<S, R>];
    const { taskOptions, workflow } = defineWorkflow(name, options as WorkflowOptions<S>, handler);
    // The engine runs the workflow with its steps (workflow/run-workflow.ts) instead of calling this.
    const alone: Handler<S, R> = () => { throw new AkadzeError(`workflow ${name}: its jobs run with their steps, through runOnce or runWorker`); };
    const task = this.task(name, taskOptions, alone);
    this.workflows.set(name, workflow);
    return task;
  }

  /**
   * Declares a debounced task: enqueues under one key (`using(db, { key })`) within `window` of each other
   * coalesce into one job, run `window` after the latest (at most `maxWait` after the first), whose handler
   * gets every payload in order (see docs/flow-control.md). With `leading: true` the first enqueue under a
   * quiet key runs at once on its own, and only the ones after it coalesce.
   * @example const reindex = app.debounced("search.reindex", { args: Doc, window: "5s" }, async (docs) => index(docs));
   */
  debounced<S extends ArgsSchema>(name: string, options: DebouncedOptions<S>, handler: DebouncedHandler<S>): DebouncedTask<S> {
    if (typeof options !== "object" || options === null) throw new InvalidInput(`debounced task ${name}: give { window }`);
    const timing = debounceTiming(name, options);
    const { window: _window, maxWait: _maxWait, leading: _leading, args, ...taskOptions } = options;
    const payload = (args ?? v.object({})) as S;
    // The job's args are the list of payloads, checked again at run time as any task's args are.
    const task = this.task(name, { ...taskOptions, args: v.array(payload) } as TaskOptions<any>, handler as Handler<any>);
    return new DebouncedTask<S>(task.definition, payload, timing, this.sqlClock, this.tracing);
  }

  /**
   * Declares a batch task: its handler gets up to `maxBatch` started jobs at once (waiting at most `maxWait` for
   * them) and answers each job's outcome, by position or in a Map by id: a result, or an Error for that job
   * alone; a thrown error is every job's. Each job keeps its own attempts, retries, timeout and history (see
   * docs/batches.md).
   * @example const digest = app.batchTask("mail.digest", { args: Mail, maxBatch: 100, maxWait: "2s" }, async (jobs) => jobs.map((job) => ({ to: job.args.to })));
   */
  batchTask<S extends ArgsSchema, R>(name: string, options: BatchTaskOptions<S>, handler: BatchHandler<S, R>): Task<S, R> {
    if (typeof options !== "object" || options === null) throw new InvalidInput(`batch task ${name}: give { maxBatch }`);
    const { maxBatch: _maxBatch, maxWait: _maxWait, ...taskOptions } = options;
    // The engine joins each job to a batch (runtime/batches.ts) instead of calling this.
    const alone: Handler<S, R> = () => { throw new AkadzeError(`batch task ${name}: its jobs run in batches, through runOnce or runWorker`); };
    if (this.tasks.has(name)) throw new InvalidInput(`task ${name} is already registered`);
    const definition = defineTask(name, taskOptions as TaskOptions<S>, alone);
    const batch = batchDefinition(name, options, handler as BatchHandler<any, unknown>, definition.timeoutMs);
    this.tasks.set(name, { ...definition, batch });
    return new Task<S, R>(this.tasks.get(name) as TaskDefinition<R>, this.sqlClock, this.tracing);
  }

  /**
   * Subscribes a task of this app to an event: every `app.sendEvent(db, event, payload)` enqueues it with the
   * payload as its args, in the sender's transaction, once per event id. A task may subscribe to many events,
   * an event have many subscribers (see docs/events.md).
   * @example app.on("order.paid", sendReceipt).on("order.paid", updateLedger);
   */
  on(event: string, task: Task<any, any>): this {
    if (!(task instanceof Task) || this.tasks.get(task.name) !== task.definition) {
      throw new InvalidInput(`app.on(${JSON.stringify(event)}): give a task of this app (what app.task, app.workflow or app.periodic returned)`);
    }
    this.subscriptions.add(event, task.definition);
    return this;
  }

  /** The names of the tasks subscribed to `event`, in the order they subscribed. @example app.subscribersOf("order.paid") // ["receipt.send"] */
  subscribersOf(event: string): string[] {
    return this.subscriptions.tasksOf(event);
  }

  /**
   * Sends an event in one statement, so pass your transaction and it commits or rolls back with your writes:
   * enqueues every task subscribed to it (`on`) with the payload, and delivers it to the workflow steps waiting
   * for it (as `sendEvent` does). The payload is checked against each subscriber's args first (InvalidInput,
   * nothing written). An `id` already sent does nothing (`repeated: true`).
   * @example await db.transaction(async (tx) => { await tx.insert(orders).values(o); await app.sendEvent(tx, "order.paid", { orderId: o.id }, { id: `paid-${o.id}` }); });
   */
  sendEvent(db: Db, event: string, payload: unknown, options?: AppEventOptions): Promise<SentAppEvent> {
    return sendAppEvent(db, this.subscriptions, this.sqlClock, event, payload, options);
  }

  /**
   * The same send as a query for `db.batch([...])` on neon-http (no interactive transactions there).
   * @example await neonDb.batch([neonDb.insert(orders).values(o), app.sendEventQuery(neonDb, "order.paid", { orderId: 7 }, { id: "paid-7" })]);
   */
  sendEventQuery(db: Db, event: string, payload: unknown, options?: AppEventOptions): BatchItem {
    return sendAppEventQuery(db, this.subscriptions, this.sqlClock, event, payload, options);
  }

  /** Registers a plain function as a task (for factories and legacy code). @example app.register("legacy.fn", plainFunction, { queue: "legacy" }); */
  register<S extends ArgsSchema, R>(name: string, fn: Handler<S, R>, options: TaskOptions<S> = {}): Task<S, R> {
    return this.task(name, options, fn);
  }

  /** Lets a module register its tasks. @example export function register(app: App) { app.task("a", async () => {}); } app.include(register); */
  include(register: (app: App) => void): this {
    register(this);
    return this;
  }

  /**
   * Declares a task and a schedule of the same name that enqueues it (with args `{}`); the options
   * also take the task's options. Every invocation enqueues the slots that came due, each exactly
   * once across concurrent invocations; after a gap only the latest missed slot (`catchUp: { all: n }`: the latest
   * n; `overlap: "skip"`: none while the previous slot's job is active). A schedule seen for
   * the first time fires its latest slot only if it came due under a minute ago.
   * @example app.periodic("report.hourly", { cron: "0 * * * *", timezone: "Europe/Berlin" }, async () => {});
   */
  periodic<S extends ArgsSchema, R>(name: string, options: ScheduleTiming & SchedulePolicy & TaskOptions<S>, handler: Handler<S, R>): Task<S, R> {
    if (typeof options !== "object" || options === null) throw new InvalidInput(`periodic ${name}: give { cron } or { every }`);
    if (this.tasks.has(name)) throw new InvalidInput(`task ${name} is already registered`);
    if (this.schedules.has(name)) throw new InvalidInput(`schedule ${name} is already defined`);
    const { cron, every, timezone, catchUp, overlap, ...taskOptions } = options;
    const definition = defineTask(name, taskOptions as TaskOptions<S>, handler);
    const schedule = defineSchedule(name, definition, { cron, every, timezone }, {}, { catchUp, overlap });
    this.tasks.set(name, definition);
    this.schedules.set(name, schedule);
    return new Task<S, R>(definition, this.sqlClock, this.tracing);
  }

  /**
   * Adds schedules for tasks already registered; all are validated before any is added.
   * @example app.addSchedules([{ name: "nightly", task: "mail.send", cron: "0 3 * * *", args: { userId: 1 } }]);
   */
  addSchedules(entries: ScheduleEntry[]): this {
    for (const schedule of defineSchedules(entries, this.tasks, new Set(this.schedules.keys()))) this.schedules.set(schedule.name, schedule);
    return this;
  }

  /** The handle of a registered task, by name. @example await app.taskByName("mail.send").using(db).enqueue({ userId: 1 }); */
  taskByName(name: string): Task {
    const definition = this.tasks.get(name);
    if (!definition) throw new InvalidInput(`unknown task ${JSON.stringify(name)}`);
    return new Task(definition, this.sqlClock, this.tracing);
  }
}

/** Creates an application. @example export const app = createApp(); */
export function createApp(options?: AppOptions): App {
  return new App(options);
}
