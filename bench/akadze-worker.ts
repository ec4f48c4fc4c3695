// akadze beyond the runOnce loops: the long-lived worker (burn-down at a given concurrency, enqueue-to-start
// latency when idle), a nudged invocation, and one cron invocation over a backlog of slower jobs.
import * as v from "valibot";
import { createApp, DEFAULT_SLOTS, parseDuration, runOnce, type Duration, type RunSummary } from "../src/index.js";
import { query } from "../src/db/query.js";
import { sql } from "drizzle-orm";
import { openAkadze, type AkadzeDriver } from "./akadze-db.js";
import { drainsOf, enqueueNoops, type Throughput } from "./akadze.js";
import { latencyProbe, type LatencyConsumer } from "./latency.js";
import { sleep } from "./stats.js";
import { timedWithCpu } from "./pg-cpu.js";
import { CURRENT, type AkadzeLib } from "./baseline.js";

/** The concurrency of the worker-vs-worker comparison (runWorker slots, graphile-worker concurrency). */
export const WORKER_SLOTS = 10;

/**
 * Burn-down by `runWorker` with `slots` slots and its other options as shipped: timed until the last body ran
 * and the worker, stopped then, has recorded every outcome (as graphile-worker's runner is stopped). Twice on
 * one fresh database, a new worker each time: the first is `firstDrainPerSec`, the rest is the second's. `lib`: a
 * baseline's akadze.
 */
export async function workerThroughput(driver: AkadzeDriver, count: number, slots = WORKER_SLOTS, lib: AkadzeLib = CURRENT): Promise<Throughput> {
  const target = await openAkadze(driver, "wk", { migrate: lib.migrate });
  try {
    let ran = 0;
    let allRan!: () => void;
    const app = lib.createApp();
    const noop = app.task("bench.noop", async () => { if (++ran === count) allRan(); });
    const result = await drainsOf(count, async () => {
      ran = 0;
      const done = new Promise<void>((resolve) => { allRan = resolve; });
      const enqueueMs = await enqueueNoops(noop, target.db, count);
      const stop = new AbortController();
      const { ms: processMs, cpu } = await timedWithCpu(target.database, count, async () => {
        const worker = lib.runWorker(app, { db: target.db, slots, signal: stop.signal });
        await Promise.race([done, worker]);
        stop.abort();
        await worker;
      });
      const [{ n }] = await query<{ n: number }>(target.db, sql`select count(*)::int as n from akadze.jobs where state <> 'succeeded'`);
      if (ran !== count || Number(n) !== 0) throw new Error(`runWorker ran ${ran} of ${count} jobs and left ${n} not succeeded`);
      return { enqueueMs, processMs, cpu };
    });
    return { ...result, transactionsPerJob: null };
  } finally {
    await target.close();
  }
}

function latencyApp(probe: { record(t: number): void }) {
  const app = CURRENT.createApp();
  const task = app.task("bench.latency", { args: v.object({ t: v.number() }) }, async ({ t }) => { probe.record(t); });
  return { app, task };
}

/** An idle `runWorker` (slots WORKER_SLOTS, its default polling and wake-ups) as a latency consumer. */
export async function workerConsumer(driver: AkadzeDriver): Promise<LatencyConsumer> {
  const target = await openAkadze(driver, "lat");
  const probe = latencyProbe();
  const { app, task } = latencyApp(probe);
  const stop = new AbortController();
  let started!: () => void;
  const ready = new Promise<void>((resolve) => { started = resolve; });
  const worker = CURRENT.runWorker(app, { db: target.db, slots: WORKER_SLOTS, signal: stop.signal, onStart: () => started() });
  await Promise.race([ready, worker, sleep(2000)]); // onStart is a convenience, not a must
  return {
    probe, how: `runWorker, slots ${WORKER_SLOTS}, default options`,
    enqueue: async (t) => { await task.using(target.db).enqueue({ t }); },
    close: async () => {
      stop.abort();
      await worker.catch(() => {});
      await target.close();
    },
  };
}

/** A nudged invocation as a latency consumer: enqueue, then runOnce at once (what an HTTP route does); no idle wait. */
export async function nudgedConsumer(driver: AkadzeDriver): Promise<LatencyConsumer> {
  const target = await openAkadze(driver, "nudge");
  const probe = latencyProbe();
  const { app, task } = latencyApp(probe);
  return {
    probe, how: "enqueue, then runOnce", settings: { idleMs: 0 },
    enqueue: async (t) => {
      await task.using(target.db).enqueue({ t });
      await CURRENT.runOnce(app, { db: target.db, batchSize: 1, slots: 1 });
    },
    close: () => target.close(),
  };
}

export interface CronTick {
  budget: Duration;
  budgetMs: number;
  jobMs: number;
  backlog: number;
  summary: Pick<RunSummary, "claimed" | "succeeded" | "released" | "roundTrips" | "durationMs">;
  /** Jobs still `running` once the invocation returned (should be 0). */
  leftRunning: number;
  /** Share of DEFAULT_SLOTS × the invocation's wall time spent in job bodies. */
  slotsBusy: number;
}

/** One cron invocation, `runOnce(app, { db, budget })` with every other option at its default, over a backlog of sleeping jobs. */
export async function cronTick(settings: { budget: Duration; jobMs: number; backlog: number }): Promise<CronTick> {
  const target = await openAkadze("node-postgres", "tick");
  try {
    const app = createApp();
    const timeout = Math.max(1000, settings.jobMs * 10);
    const slow = app.task("bench.io", { timeout }, async () => { await sleep(settings.jobMs); });
    // Never less than twice what the default slots could run in the budget, so the tick cannot run out of work.
    const backlog = Math.max(settings.backlog, Math.ceil((2 * DEFAULT_SLOTS * parseDuration(settings.budget)) / settings.jobMs));
    const args = Array.from({ length: backlog }, () => ({}));
    for (let i = 0; i < args.length; i += 1000) await slow.using(target.db).enqueueMany(args.slice(i, i + 1000));
    const summary = await runOnce(app, { db: target.db, budget: settings.budget });
    const [{ n }] = await query<{ n: number }>(target.db, sql`select count(*)::int as n from akadze.jobs where state = 'running'`);
    const slotMs = DEFAULT_SLOTS * summary.durationMs;
    return {
      ...settings, backlog, budgetMs: parseDuration(settings.budget), leftRunning: Number(n), slotsBusy: slotMs > 0 ? (summary.succeeded * settings.jobMs) / slotMs : 0,
      summary: { claimed: summary.claimed, succeeded: summary.succeeded, released: summary.released, roundTrips: summary.roundTrips, durationMs: summary.durationMs },
    };
  } finally {
    await target.close();
  }
}
