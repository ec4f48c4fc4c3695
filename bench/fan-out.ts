// Issue 24's fan-out: how many jobs one cron schedule drains in a minute over neon-http (the local endpoint)
// when its tick fans out to 1, 4, 8 or 16 invocations (each continued by successors while work is due), against
// one plain invocation per tick, and what each costs Postgres in CPU per job.
import { setMaxListeners } from "node:events";
import { createApp, runOnce, type Duration, type FanOutOptions, type RunOnceOptions, type Task } from "../src/index.js";
import { parseDuration } from "../src/core/duration.js";
import { openAkadze } from "./akadze-db.js";
import { cpuSpentMs, snapshotCpu } from "./pg-cpu.js";
import { medianRow, sleep } from "./stats.js";

export interface FanOutSettings {
  /** Fan-out widths (`maxInvocations`); 0 is one plain invocation per tick (no fan-out). */
  widths: number[];
  /** How long one schedule is watched after its tick: a minute, the cron's period. */
  windowMs: number;
  budget: Duration;
  jobMs: number;
  slots: number;
  batchSize: number;
  /** Windows of fan-out 1, the baseline every wider row's ratios divide by (its median is reported). */
  baselineWindows: number;
}

export interface FanOutRow {
  /** `maxInvocations`, or 0 for no fan-out. */
  width: number;
  windowMs: number;
  /** Jobs whose body ended inside the window. */
  drained: number;
  jobsPerMinute: number;
  /** Invocations that ran (tick, siblings and successors). */
  invocations: number;
  /** The most invocations running jobs at one moment (each from its first job's start to its last job's end). */
  peakLive: number;
  /** Budgets the chain reached (1 + the highest successor generation). */
  budgets: number;
  /** Statements the invocations sent (their summaries' roundTrips). */
  statements: number;
  /** Postgres backends' CPU over the window (null where /proc cannot see them). */
  pgCpuMs: number | null;
  pgCpuPerJobMs: number | null;
  /** Each window's CPU ms per job, where the row is the median of several (the baseline, fan-out 1). */
  pgCpuPerJobEach?: (number | null)[];
}

/**
 * Each width's window once, in order, then fan-out 1's again until it has `baselineWindows`: the baseline's row is
 * their median, each window's CPU per job beside it. One window of it cost 1.1, 3.1 and 1.4 ms of Postgres CPU a job
 * in three full runs on this machine (2026-12-05, each counting the tick's first budget only), as its jobs ended in
 * waves or apart (statements 655-1,305 for the same work), and 2.26, 1.60 and 1.56 in the three windows of the next
 * run; every wider row's CPU ratio divides by it.
 */
export async function fanOutWindows(s: FanOutSettings, log: (line: string) => void): Promise<FanOutRow[]> {
  const rows: FanOutRow[] = [];
  const windowOf = async (width: number) => {
    log(`fan-out: neon-http, ${width === 0 ? "none" : `maxInvocations ${width}`}, ${s.windowMs / 1000} s after one tick`);
    return fanOutMinute(width, s);
  };
  for (const width of s.widths) rows.push(await windowOf(width));
  const baseline = rows.filter((r) => r.width === 1);
  if (baseline.length === 0) return rows;
  while (baseline.length < s.baselineWindows) baseline.push(await windowOf(1));
  if (baseline.length === 1) return rows;
  return rows.map((r) => r.width === 1 ? { ...medianRow(baseline), pgCpuPerJobEach: baseline.map((b) => b.pgCpuPerJobMs) } : r);
}

function mostAtOnce(spans: { from: number; to: number }[]): number {
  const edges = spans.flatMap((s) => [{ at: s.from, d: 1 }, { at: s.to, d: -1 }]).sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0, most = 0;
  for (const e of edges) { open += e.d; most = Math.max(most, open); }
  return most;
}

/** One cron tick at fan-out `width` over a backlog larger than the window can drain; the chain is stopped when the window ends. */
export async function fanOutMinute(width: number, s: FanOutSettings): Promise<FanOutRow> {
  const target = await openAkadze("neon-http", `fo${width}`);
  try {
    const budgetMs = parseDuration(s.budget);
    let deadline = Infinity;
    let drained = 0;
    const spans = new Map<string, { from: number; to: number }>();
    const app = createApp();
    const io: Task = app.task("bench.fan", { timeout: Math.max(1000, s.jobMs * 10) }, async (_args, job) => {
      const from = performance.now();
      await sleep(s.jobMs);
      const to = performance.now();
      if (to <= deadline) drained++;
      const span = spans.get(job.invocation);
      spans.set(job.invocation, span ? { from: Math.min(span.from, from), to: Math.max(span.to, to) } : { from, to });
    });
    // More than the widest fan-out could run in the window, so the backlog never runs dry.
    const jobs = Math.ceil(Math.max(1, width) * s.slots * (s.windowMs / s.jobMs) * 1.3);
    const args = Array.from({ length: 1000 }, () => ({}));
    for (let i = 0; i < jobs; i += 1000) await io.using(target.db).enqueueMany(args.slice(0, Math.min(1000, jobs - i)));

    const stop = new AbortController();
    setMaxListeners(1000, stop.signal); // every invocation of the chain listens to it
    let invocations = 0, statements = 0, budgets = 1;
    const count = (summary: { roundTrips: number; fanOut?: { generation: number } }) => {
      invocations++; statements += summary.roundTrips;
      budgets = Math.max(budgets, (summary.fanOut?.generation ?? 0) + 1);
    };
    const shape: RunOnceOptions = { db: target.db, slots: s.slots, batchSize: s.batchSize, budget: budgetMs, signal: stop.signal };
    // Siblings and successors still ending when the tick's own invocation returns: waited for, so that their last
    // statements are counted (and CPU) and none meets a dropped database.
    const running = new Set<Promise<void>>();
    const fanOut: FanOutOptions = {
      maxInvocations: width,
      // The platform's part, in process: each sibling or successor is one more runOnce.
      invoke: (r) => {
        const invocation = runOnce(app, { ...shape, id: r.id, fanOut: { ...fanOut, ticket: { chain: r.chain, generation: r.generation } } }).then(count);
        running.add(invocation);
        return invocation.finally(() => running.delete(invocation));
      },
    };
    const before = await snapshotCpu(target.database!);
    deadline = performance.now() + s.windowMs;
    const timer = setTimeout(() => stop.abort(), s.windowMs);
    // Without fan-out the tick is one invocation, and the schedule does nothing else until the next minute.
    count(await runOnce(app, width === 0 ? shape : { ...shape, fanOut }));
    while (running.size > 0) await Promise.allSettled([...running]);
    const pgCpuMs = cpuSpentMs(before, await snapshotCpu(target.database!));
    clearTimeout(timer);
    return {
      width, windowMs: s.windowMs, drained, jobsPerMinute: drained * (60_000 / s.windowMs), invocations, budgets,
      peakLive: mostAtOnce([...spans.values()]), statements, pgCpuMs, pgCpuPerJobMs: pgCpuMs === null || drained === 0 ? null : pgCpuMs / drained,
    };
  } finally {
    await target.close();
  }
}
