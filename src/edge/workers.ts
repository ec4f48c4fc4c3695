// The Cloudflare Workers side of an invocation: a `scheduled` handler around runOnce.
import type { App } from "../app/app.js";
import type { Duration } from "../core/duration.js";
import type { Db } from "../db/driver.js";
import { runOnce, type RunOnceOptions, type RunSummary } from "../runtime/run-once.js";

/** What workerd passes to `scheduled` (a subset, so akadze needs no Workers type package). */
export interface ScheduledEvent { cron: string; scheduledTime: number }
export interface WaitUntil { waitUntil(promise: Promise<unknown>): void }

/** Options of `scheduledInvocation`. */
export interface ScheduledOptions<E> {
  getDb: (env: E) => Db;
  /** Keep it well inside the Worker's CPU limit (30 s by default on paid plans). */
  budget: Duration;
  run?: Omit<RunOnceOptions, "db" | "budget">;
}

/**
 * A Worker `scheduled` handler: one `runOnce` inside `ctx.waitUntil`, its summary logged when it did anything.
 * @example export default { fetch: web.fetch, scheduled: scheduledInvocation(app, { getDb: (env) => dbFor(env), budget: "25s" }) };
 */
export function scheduledInvocation<E>(app: App, options: ScheduledOptions<E>) {
  return (_event: ScheduledEvent, env: E, ctx: WaitUntil): void => {
    ctx.waitUntil(runOnce(app, { ...options.run, db: options.getDb(env), budget: options.budget }).then(logSummary));
  };
}

function logSummary(summary: RunSummary): void {
  if (summary.claimed + summary.recovered + summary.cancelled + summary.rateLimited > 0) console.log("akadze invocation", JSON.stringify(summary));
}
