import * as v from "valibot";
import { sql } from "drizzle-orm";
import { DurationSchema, parseDuration, type Duration } from "../core/duration.js";
import { MAX_SPAN_MS, parseOrThrow } from "../core/validate.js";
import { findMisfits, type Misfits } from "./misfits.js";
import { queryJson, type Db } from "../db/driver.js";
import { LIVE_WITHIN } from "./workers.js";

/** "Recent" in the metrics: retries, failures and finished jobs are counted over this window. */
export const METRICS_WINDOW = "15m";

type Labels = Record<string, string>;
interface Family { name: string; help: string; samples: { labels: Labels; value: number }[] }

/** What one statement reads for the metrics. */
interface Snapshot {
  jobs: [string, string, string, number][];
  queues: [string, boolean, number, number, number][];
  attemptErrors: [string, string, number][];
  finished: [string, string, string, number][];
  limits: [string, number | null, number, number | null, number][];
  workers: [string, number][];
}

/**
 * akadze's state as Prometheus text (exposition format 0.0.4), read in one statement: jobs by queue, task
 * and state; per queue the oldest due job's wait, running jobs, expired leases and pause; failed attempts and
 * finished jobs over the last `window`; limit usage; live workers. The CLI's `metrics` and `GET /metrics` share it.
 * @example app.get("/metrics", async (c) => c.text(await renderMetrics(db), 200, { "content-type": PROMETHEUS_CONTENT_TYPE }));
 */
export async function renderMetrics(db: Db, options: { now?: Date; window?: Duration; knownTasks?: string[] } = {}): Promise<string> {
  const o = parseOrThrow(MetricsOptionsSchema, { now: options.now, window: options.window }, "metrics options");
  const now = o.now ?? new Date();
  const windowMs = o.window ?? parseDuration(METRICS_WINDOW);
  const [s, misfits] = await Promise.all([
    queryJson<Snapshot>(db, snapshotStatement(now, windowMs)),
    options.knownTasks ? findMisfits(db, options.knownTasks) : null,
  ]);
  return formatFamilies([...familiesOf(s, windowMs), ...(misfits ? misfitFamilies(misfits) : [])]);
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
  window: v.optional(v.pipe(DurationSchema, v.minValue(1, "window must be longer than zero"), v.maxValue(MAX_SPAN_MS, `window must be at most ${MAX_SPAN_MS} ms`))),
});

/** The Content-Type of `renderMetrics`' text. */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

function snapshotStatement(now: Date, windowMs: number) {
  const at = sql`${now.toISOString()}::timestamptz`;
  const since = sql`${new Date(now.getTime() - windowMs).toISOString()}::timestamptz`;
  const liveSince = sql`${new Date(now.getTime() - parseDuration(LIVE_WITHIN)).toISOString()}::timestamptz`;
  const rows = (query: ReturnType<typeof sql>) => sql`coalesce((select jsonb_agg(x.v order by x.v) from (${query}) x), '[]'::jsonb)`;
  return sql`select jsonb_build_object(
    'jobs', ${rows(sql`select jsonb_build_array(queue, task, state, count(*)) as v from akadze.jobs group by queue, task, state`)},
    'queues', ${rows(sql`
      with c as (
        select queue,
          extract(epoch from ${at} - min(run_at) filter (where state = 'queued' and run_at <= ${at})) as oldest,
          count(*) filter (where state = 'running') as running,
          count(*) filter (where state = 'running' and lease_expires_at < ${at}) as expired
        from akadze.jobs group by queue),
      n as (select queue from c union select name from akadze.queues)
      select jsonb_build_array(n.queue, coalesce(q.paused, false), coalesce(c.oldest, 0), coalesce(c.running, 0), coalesce(c.expired, 0)) as v
      from n left join c on c.queue = n.queue left join akadze.queues q on q.name = n.queue`)},
    'attemptErrors', ${rows(sql`
      select jsonb_build_array(j.queue, j.task, count(*)) as v
      from akadze.jobs j cross join lateral jsonb_array_elements(j.errors) e
      where j.errors <> '[]'::jsonb and (e->>'at')::timestamptz > ${since}
      group by j.queue, j.task`)},
    'finished', ${rows(sql`
      select jsonb_build_array(queue, task, state, count(*)) as v from akadze.jobs
      where state in ('succeeded', 'failed', 'cancelled', 'rate_limited') and finished_at > ${since}
      group by queue, task, state`)},
    'limits', ${rows(sql`
      select jsonb_build_array(l.key, l.max_running,
        (select count(*) from akadze.limit_slots s where s.key = l.key and s.job_id is not null), l.max_starts,
        case when l.window_ms is null then 0 else (select count(*) from akadze.limit_tokens t where t.key = l.key
          and t.last_start > ${at} - (l.window_ms::float8 * interval '1 millisecond')) end) as v
      from akadze.limits l`)},
    'workers', ${rows(sql`
      select jsonb_build_array(k.kind, (select count(*) from akadze.workers w where w.kind = k.kind and w.stopped_at is null and (
        (w.kind = 'worker' and w.last_seen_at >= ${liveSince}) or
        (w.kind = 'invocation' and exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = w.id
          and j.lease_expires_at >= ${at}))))) as v
      from (values ('invocation'), ('worker')) k(kind)`)}
  ) as r`;
}

function familiesOf(s: Snapshot, windowMs: number): Family[] {
  const window = windowMs % 3_600_000 === 0 ? `${windowMs / 3_600_000}h` : windowMs % 60_000 === 0 ? `${windowMs / 60_000}m` : `${windowMs / 1000}s`;
  const family = (name: string, help: string, samples: Family["samples"]): Family => ({ name, help, samples });
  return [
    family("akadze_jobs", "Jobs in the table by queue, task and state (finished ones stay until retention prunes them).",
      s.jobs.map(([queue, task, state, n]) => ({ labels: { queue, task, state }, value: n }))),
    family("akadze_queue_oldest_due_seconds", "Seconds the longest-waiting due queued job of the queue has waited since its run_at (0 when none is due).",
      s.queues.map(([queue, , oldest]) => ({ labels: { queue }, value: Number(oldest) }))),
    family("akadze_queue_running_jobs", "Jobs running now, by queue.",
      s.queues.map(([queue, , , running]) => ({ labels: { queue }, value: running }))),
    family("akadze_queue_expired_leases", "Running jobs whose lease expired: their invocation died; the next claim recovers them.",
      s.queues.map(([queue, , , , expired]) => ({ labels: { queue }, value: expired }))),
    family("akadze_queue_paused", "1 while the queue is paused.",
      s.queues.map(([queue, paused]) => ({ labels: { queue }, value: paused ? 1 : 0 }))),
    family("akadze_recent_failed_attempts", `Failed attempts (each retry and each final failure) recorded in the last ${window}.`,
      s.attemptErrors.map(([queue, task, n]) => ({ labels: { queue, task }, value: n }))),
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
