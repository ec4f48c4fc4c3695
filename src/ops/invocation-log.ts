// What the dev server, the worker and the cron handlers log about an invocation: one line per failed or
// retried job with its error, and a warning for tasks the budget can never run, so nothing fails silently.
// No Node imports: the edge handlers use it too.
import type { App } from "../app/app.js";
import { consoleLog, devLogSink, type LogRecord, type LogSink } from "../app/log.js";
import { parseDuration, type Duration } from "../core/duration.js";
import { errorHeadline } from "../core/error-causes.js";
import { CLAIM_MARGIN_MS } from "../core/claim-margin.js";
import type { RunSummary } from "../runtime/run-options.js";

/** How much a handler logs: `warn` (failed and retried jobs, misfits), `info` (also one line per busy invocation), `silent`. */
export type LogLevel = "silent" | "warn" | "info";
/** The accepted log levels, quietest first. @example program.option("--log-level <level>", LOG_LEVELS.join(" | ")) */
export const LOG_LEVELS: readonly LogLevel[] = ["silent", "warn", "info"];

/** One log line and its level, with the values it names (the fields of its `LogRecord`). */
export interface LogLine { level: "warn" | "info"; text: string; fields?: Record<string, unknown> }

const COUNTS = ["claimed", "succeeded", "retried", "snoozed", "failed", "cancelled", "released", "recovered", "rateLimited"] as const;

/** An invocation did something worth a log line: it claimed, recovered, cancelled or rate-limited a job. */
export function didAnything(summary: RunSummary): boolean {
  return summary.claimed + summary.recovered + summary.cancelled + summary.rateLimited > 0;
}

/**
 * The lines for one invocation: an info line when it did anything (naming the tasks whose timeout did not
 * fit its budget, `summary.tooLongForBudget`), and a warn line per failed or retried job (`summary.problems`).
 * The budget misfit is a warning once, when the handler is built (`warnTasksOverBudget`), not every tick.
 * @example for (const line of invocationLogLines(summary)) console.log(line.text);
 */
export function invocationLogLines(summary: RunSummary, what = "invocation"): LogLine[] {
  const lines: LogLine[] = [];
  if (didAnything(summary)) {
    const parts = COUNTS.filter((k) => summary[k] > 0).map((k) => `${k} ${summary[k]}`);
    const misfits = summary.tooLongForBudget.length > 0 ? `; timeout over budget, not claimed: ${summary.tooLongForBudget.join(", ")}` : "";
    const driver = summary.driver ? ` on ${summary.driver}` : "";
    const trips = `${summary.roundTrips} round trip${summary.roundTrips === 1 ? "" : "s"}`;
    lines.push({ level: "info", text: `${what}${driver}: ${parts.join(", ")} (${trips}, ${formatMs(summary.durationMs)}${misfits})`, fields: { invocation: summary.id } });
  }
  for (const p of summary.problems ?? []) {
    const outcome = p.to === "failed" ? "failed" : "will retry";
    lines.push({ level: "warn", text: `job ${p.jobId} (${p.task}, queue ${p.queue}, attempt ${p.attempt}) ${outcome}: ${p.error.kind}: ${errorHeadline(p.error.message)}`,
      fields: { jobId: p.jobId, task: p.task, queue: p.queue, attempt: p.attempt, to: p.to, errorKind: p.error.kind } });
  }
  return lines;
}

/** A duration for a log line: whole milliseconds, or seconds with one decimal from 10 s. @example formatMs(478.78) // "479 ms" */
export function formatMs(ms: number): string {
  return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

/**
 * Writes the lines at or above `level` to `log` (the app's sink, `app.log`).
 * @example writeLogLines(invocationLogLines(summary), "warn", app.log);
 */
export function writeLogLines(lines: LogLine[], level: LogLevel, log: LogSink = consoleLog): void {
  if (level === "silent") return;
  for (const line of lines) if (line.level === "warn" || level === "info") log(recordOf(line));
}

/**
 * Hands the info lines to `akadze dev`'s terminal, if one listens, unless `level` wrote them already
 * (`info`) or asked for silence: what `akadze dev` shows of the nudges and fan-out siblings its server runs.
 */
export function reportToDev(lines: LogLine[], level: LogLevel): void {
  const sink = devLogSink();
  if (!sink || level !== "warn") return;
  for (const line of lines) if (line.level === "info") sink(recordOf(line));
}

function recordOf(line: LogLine): LogRecord {
  return { level: line.level, message: line.text, ...(line.fields ? { fields: line.fields } : {}) };
}

/**
 * Tasks of `app` whose declared timeout does not fit `budget` (with the claim margin): an invocation with
 * that budget never claims their jobs. Empty when all fit.
 * @example tasksOverBudget(app, "10s"); // ["report.build"] if its timeout is "10s" or more
 */
export function tasksOverBudget(app: App, budget: Duration): string[] {
  const budgetMs = budget === Infinity ? Infinity : parseDuration(budget, "budget");
  return [...app.tasks.values()].filter((t) => t.timeoutMs !== undefined && t.timeoutMs > budgetMs - CLAIM_MARGIN_MS).map((t) => t.name);
}

/** The warning for tasks that never run under a budget. @example console.warn(overBudgetSentence(["report.build"], "the nudge's budget (10s)")); */
export function overBudgetSentence(names: string[], budget: string): string {
  return `task${names.length > 1 ? "s" : ""} ${names.join(", ")} ${names.length > 1 ? "have timeouts" : "has a timeout"} longer than ${budget} ` +
    `minus ${CLAIM_MARGIN_MS} ms to claim: ${names.length > 1 ? "their" : "its"} jobs are never run there; give the handler a longer budget or the task a shorter timeout`;
}

/**
 * Warns in the app's log when some tasks can never run under `budget`: called once when a handler is built.
 * @example warnTasksOverBudget(app, "25s", "the cron handler");
 */
export function warnTasksOverBudget(app: App, budget: Duration, where: string): string[] {
  const names = tasksOverBudget(app, budget);
  if (names.length > 0) app.log({ level: "warn", message: overBudgetSentence(names, `${where}'s budget (${typeof budget === "number" ? `${budget} ms` : budget})`), fields: { tasks: names } });
  return names;
}
