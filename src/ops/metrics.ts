import * as v from "valibot";
import { parseDuration, type Duration } from "../core/duration.js";
import { TRANSITION_HOOK_FAILED } from "../core/errors.js";
import { DurationRangeSchema, MAX_SPAN_MS, parseOrThrow } from "../core/validate.js";
import { queryJson, type Db } from "../db/query.js";
import { readMetricsStatement, type MetricsSnapshot } from "../sql/reads/read-metrics.js";
import { HISTORY_COUNT_ROWS } from "../sql/history/history-counts.js";
import { msBefore, timestamp } from "../sql/time.js";
import type { Misfits } from "./misfits.js";

/** "Recent" in the metrics: retries, failures and finished jobs are counted over this window. */
export const METRICS_WINDOW = "15m";

type Labels = Record<string, string>;
interface Family { name: string; help: string; samples: { labels: Labels; value: number }[] }

/**
 * akadze's state as Prometheus text (exposition format 0.0.4), read in one statement: jobs by queue, task
 * and state; per queue the oldest due job's wait, running jobs, expired leases and pause; failed attempts,
 * throwing transition hooks and finished jobs over the last `window`; limit usage; live workers. The CLI's
 * `metrics` and `GET /metrics` share it.
 * @example app.get("/metrics", async (c) => c.text(await renderMetrics(db), 200, { "content-type": PROMETHEUS_CONTENT_TYPE }));
 */
export async function renderMetrics(db: Db, options: { now?: Date; window?: Duration; knownTasks?: string[] } = {}): Promise<string> {
  const o = parseOrThrow(MetricsOptionsSchema, { now: options.now, window: options.window }, "metrics options");
  const windowMs = o.window ?? parseDuration(METRICS_WINDOW);
  const s = await queryJson<MetricsSnapshot>(db, readMetricsStatement(timestamp(o.now), msBefore(o.now, windowMs), options.knownTasks));
  return formatFamilies([...familiesOf(s, windowMs), ...(s.misfits ? misfitFamilies(s.misfits) : [])]);
}

/** Only an app knows its tasks: the routes pass them (`knownTasks`), the app-less CLI does not. */
function misfitFamilies(m: Misfits): Family[] {
  return [
    { name: "akadze_jobs_unknown_task", help: "Queued jobs of a task this app does not define: no invocation of it will ever claim them.",
      samples: m.unknownTasks.map((r) => ({ labels: { queue: r.queue, task: r.task }, value: r.jobs })) },
    { name: "akadze_jobs_unlimited_key", help: "Queued or running jobs whose limitKey has no limit (setLimit was never called for it).",
      samples: m.unlimitedKeys.map((r) => ({ labels: { key: r.key }, value: r.jobs })) },
  ];
}

const MetricsOptionsSchema = v.strictObject({
  now: v.optional(v.date("now must be a valid Date")),
  window: v.optional(DurationRangeSchema("window", 1, MAX_SPAN_MS)),
});

/** The Content-Type of `renderMetrics`' text. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

function familiesOf(s: MetricsSnapshot, windowMs: number): Family[] {
  const window = windowMs % 3_600_000 === 0 ? `${windowMs / 3_600_000}h` : windowMs % 60_000 === 0 ? `${windowMs / 60_000}m` : `${windowMs / 1000}s`;
  const family = (name: string, help: string, samples: Family["samples"]): Family => ({ name, help, samples });
  return [
    family("akadze_jobs", `Jobs by queue, task and state: live ones, and finished ones until retention drops them (succeeded, cancelled and rate_limited estimated from a sample once more than ${HISTORY_COUNT_ROWS} are kept).`,
      s.jobs.map(([queue, task, state, n]) => ({ labels: { queue, task, state }, value: n }))),
    family("akadze_queue_oldest_due_seconds", "Seconds the longest-waiting due queued job of the queue has waited since its run_at (0 when none is due).",
      s.queues.map(([queue, , oldest]) => ({ labels: { queue }, value: Number(oldest) }))),
    family("akadze_queue_running_jobs", "Jobs running now (started), by queue.",
      s.queues.map(([queue, , , running]) => ({ labels: { queue }, value: running }))),
    family("akadze_queue_claimed_jobs", "Jobs a worker or invocation claimed and holds but has not started yet (its prefetch), by queue.",
      s.queues.map(([queue, , , , , claimed]) => ({ labels: { queue }, value: claimed }))),
    family("akadze_queue_expired_leases", "Running jobs whose lease expired: their invocation died; the next claim recovers them.",
      s.queues.map(([queue, , , , expired]) => ({ labels: { queue }, value: expired }))),
    family("akadze_queue_paused", "1 while the queue is paused.",
      s.queues.map(([queue, paused]) => ({ labels: { queue }, value: paused ? 1 : 0 }))),
    family("akadze_recent_failed_attempts", `Failed attempts (each retry and each final failure) recorded in the last ${window}.`,
      s.errors.filter(([, , n]) => n > 0).map(([queue, task, n]) => ({ labels: { queue, task }, value: n }))),
    family("akadze_recent_transition_hook_failures", `onTransition hook calls that threw in the last ${window}: each is a ${TRANSITION_HOOK_FAILED} entry in its job's errors; the change it saw stood.`,
      s.errors.filter(([, , , n]) => n > 0).map(([queue, task, , n]) => ({ labels: { queue, task }, value: n }))),
    family("akadze_recent_finished_jobs", `Jobs that finished in the last ${window}, by outcome.`,
      s.finished.map(([queue, task, state, n]) => ({ labels: { queue, task, state }, value: n }))),
    family("akadze_limit_running", "Jobs holding one of the limit's maxRunning slots.",
      s.limits.filter((l) => l[1] !== null).map(([key, , running]) => ({ labels: { key }, value: running }))),
    family("akadze_limit_max_running", "The limit's maxRunning.",
      s.limits.filter((l) => l[1] !== null).map(([key, max]) => ({ labels: { key }, value: max as number }))),
    family("akadze_limit_starts_in_window", "Starts inside the limit's current sliding window.",
      s.limits.filter((l) => l[3] !== null).map(([key, , , , starts]) => ({ labels: { key }, value: starts }))),
    family("akadze_limit_max_starts", "The limit's maxStarts per window.",
      s.limits.filter((l) => l[3] !== null).map(([key, , , max]) => ({ labels: { key }, value: max as number }))),
    family("akadze_workers_live", "Invocations holding leases and long-lived workers seen recently.",
      s.workers.map(([kind, n]) => ({ labels: { kind }, value: n }))),
  ];
}

/** Label values escape backslash, double quote and newline; HELP text escapes backslash and newline. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

function formatFamilies(families: Family[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} gauge`);
    for (const sample of f.samples) {
      const labels = Object.entries(sample.labels).map(([k, v]) => `${k}="${escapeLabelValue(String(v))}"`).join(",");
      lines.push(`${f.name}${labels ? `{${labels}}` : ""} ${formatValue(Number(sample.value))}`);
    }
  }
  return `${lines.join("\n")}\n`;
}
