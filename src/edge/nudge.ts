import type { Context } from "hono";
import type { App } from "../app/app.js";
import { runOnce, type RunOnceOptions } from "../runtime/run-once.js";

/** Budget of a nudge: short, since the cron picks up whatever it leaves. */
export const NUDGE_BUDGET = "10s";

/**
 * Starts one invocation after the response is sent (`executionCtx.waitUntil`), so a job enqueued by
 * this request starts now instead of at the next cron tick. A nudge that fails only logs: the job
 * stays queued for the cron. Without an ExecutionContext (plain Node) the invocation simply runs on.
 * @example await order.using(db).enqueue(args); nudge(c, app, { db, queues: ["orders"] });
 */
export function nudge(c: Context, app: App, options: RunOnceOptions): void {
  const invocation = runOnce(app, { budget: NUDGE_BUDGET, ...options }).then(
    () => undefined,
    (error: unknown) => { console.error("akadze: nudge failed; the job waits for the next cron tick", error); },
  );
  let ctx: { waitUntil(promise: Promise<unknown>): void } | undefined;
  try { ctx = c.executionCtx; } catch { /* Hono throws when the runtime gave no ExecutionContext */ }
  ctx?.waitUntil(invocation);
}
