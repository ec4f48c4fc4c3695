// The Cloudflare Workers side of an invocation: a `scheduled` handler around runOnce.
import type { App } from "../app/app.js";
import { INVOCATION_SUMMARY } from "../app/log.js";
import type { Duration } from "../core/duration.js";
import type { Db } from "../db/query.js";
import { didAnything, invocationLogLines, warnTasksOverBudget, writeLogLines, type LogLevel } from "../ops/invocation-log.js";
import { runOnce, type RunOnceOptions, type RunSummary } from "../runtime/run-once.js";
import type { FanOutOptions } from "../runtime/fan-out.js";

/** What workerd passes to `scheduled` (a subset, so akadze needs no Workers type package). */
export interface ScheduledEvent { cron: string; scheduledTime: number }
export interface WaitUntil { waitUntil(promise: Promise<unknown>): void }

/** Options of `scheduledInvocation`. */
export interface ScheduledOptions<E> {
  /** The database for this invocation, e.g. `(env) => connect(env)`. */
  getDb: (env: E) => Db | Promise<Db>;
  /** Keep it well inside the Worker's CPU limit (30 s by default on paid plans). */
  budget: Duration;
  run?: Omit<RunOnceOptions, "db" | "budget">;
  /** "info" (default): the summary of every busy invocation, and one line per failed or retried job; "warn": only those lines; "silent". */
  log?: LogLevel;
  /**
   * Fan-out for the cron tick: how it starts siblings, usually `selfBinding(env.SELF, { secret })` with the
   * Worker bound to itself (the tick's `ctx.waitUntil` keeps them alive), and `maxInvocations`. Default: off.
   */
  fanOut?: (env: E) => FanOutOptions | undefined;
}

/**
 * A Worker `scheduled` handler: one `runOnce` inside `ctx.waitUntil`, its summary logged when it did
 * anything, each failed or retried job on its own line; tasks whose timeout cannot fit `budget` are a
 * warning when the handler is built.
 * @example export default { fetch: web.fetch, scheduled: scheduledInvocation(app, { getDb: (env) => connect(env), budget: "25s" }) };
 */
export function scheduledInvocation<E>(app: App, options: ScheduledOptions<E>) {
  const log = options.log ?? "info";
  if (log !== "silent") warnTasksOverBudget(app, options.budget, "the cron handler");
  return (_event: ScheduledEvent, env: E, ctx: WaitUntil): void => {
    const fanOut = options.fanOut?.(env);
    const invocation = (async () => runOnce(app, {
      ...options.run, db: await options.getDb(env), budget: options.budget,
      ...(fanOut ? { fanOut: { waitUntil: (promise: Promise<unknown>) => ctx.waitUntil(promise), ...fanOut } } : {}),
    }))();
    ctx.waitUntil(invocation.then((summary) => logSummary(app, summary, log)));
  };
}

function logSummary(app: App, summary: RunSummary, log: LogLevel): void {
  if (log === "info" && didAnything(summary)) app.log({ level: "info", message: INVOCATION_SUMMARY, fields: { summary } });
  writeLogLines(invocationLogLines(summary, "cron invocation").filter((line) => line.level === "warn"), log, app.log);
}
