import type { Context } from "hono";
import type { App } from "../app/app.js";
import { invocationLogLines, overBudgetSentence, reportToDev, writeLogLines, type LogLevel } from "../ops/invocation-log.js";
import { runOnce, type RunOnceOptions } from "../runtime/run-once.js";
import { memoryOf } from "../runtime/process-memory.js";

/** Budget of a nudge: short, since the cron picks up whatever it leaves. */
export const NUDGE_BUDGET = "10s";

/** Options of `nudge`: an invocation's, plus how much it logs (default "warn": failed and retried jobs, misfit tasks). */
export type NudgeOptions = RunOnceOptions & { log?: LogLevel };


/**
 * Starts one invocation after the response is sent (`executionCtx.waitUntil`), so a job enqueued by
 * this request starts now instead of at the next cron tick. A nudge that fails only logs: the job
 * stays queued for the cron. Without an ExecutionContext (plain Node) the invocation simply runs on.
 * Failed and retried jobs are logged one line each; a task whose timeout cannot fit the nudge's budget
 * is a warning the first time a nudge leaves it queued.
 * @example await order.using(db).enqueue(args); nudge(c, app, { db, queues: ["orders"] });
 */
export function nudge(c: Context, app: App, options: NudgeOptions): void {
  const { log = "warn", ...run } = options;
  const budget = run.budget ?? NUDGE_BUDGET;
  const invocation = runOnce(app, { ...run, budget }).then(
    (summary) => {
      const lines = invocationLogLines(summary, "nudge");
      writeLogLines(lines, log, app.log);
      reportToDev(lines, log);
      // Said once per isolate, not per request.
      const seen = memoryOf(app).overNudgeBudget;
      const fresh = summary.tooLongForBudget.filter((name) => !seen.has(name));
      fresh.forEach((name) => seen.add(name));
      if (fresh.length > 0 && log !== "silent") {
        app.log({ level: "warn", message: `${overBudgetSentence(fresh, `the nudge's budget (${budget})`)}; a cron or worker with a longer budget must run them`, fields: { tasks: fresh } });
      }
    },
    (error: unknown) => { app.log({ level: "error", message: "nudge failed; the job waits for the next cron tick", fields: { error } }); },
  );
  let ctx: { waitUntil(promise: Promise<unknown>): void } | undefined;
  try { ctx = c.executionCtx; } catch { /* Hono throws when the runtime gave no ExecutionContext */ }
  ctx?.waitUntil(invocation);
}
