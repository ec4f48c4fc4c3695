// What the benchmark measures of akadze: bulk enqueue, burn-down, statements per job, enqueue-to-start
// latency and the cost of an invocation with nothing to do.
import * as v from "valibot";
import { createApp, runOnce, runWorker, type App, type Db, type Task } from "../src/index.js";
import { openAkadze, type AkadzeDriver, type AkadzeTarget } from "./akadze-db.js";
import { transactionsIn } from "./databases.js";
import { median, percentile, rate, sleep, timed, wallMs } from "./stats.js";

/** How the burn-down runs: `loops` runOnce loops side by side, each claiming `batchSize` and running `slots` at once. */
export const BURN_DOWN = { loops: 4, batchSize: 500, slots: 50 };
/** Jobs per enqueue statement, for every system. */
export const ENQUEUE_CHUNK = 1000;

export interface Throughput {
  enqueuePerSec: number;
  processPerSec: number;
  enqueueMs: number;
  processMs: number;
  /** Postgres transactions (each statement outside a transaction is one) per job, enqueue and processing, from pg_stat_database. */
  transactionsPerJob: number | null;
}

function noopApp(): { app: App; noop: Task } {
  const app = createApp();
  const noop = app.task("bench.noop", async () => {});
  return { app, noop };
}

/** Inserts `count` jobs, `ENQUEUE_CHUNK` per statement; returns the milliseconds it took. */
export async function enqueueNoops(noop: Task, db: Db, count: number): Promise<number> {
  const args = Array.from({ length: count }, () => ({}));
  const { ms } = await timed(async () => {
    for (let i = 0; i < count; i += ENQUEUE_CHUNK) await noop.using(db).enqueueMany(args.slice(i, i + ENQUEUE_CHUNK));
  });
  return ms;
}

/** Runs `loops` runOnce loops until a claim comes back empty; returns the summed round trips. */
export async function drain(app: App, db: Db, shape: { loops: number; batchSize: number; slots: number }): Promise<{ roundTrips: number; succeeded: number }> {
  let roundTrips = 0;
  let succeeded = 0;
  await Promise.all(Array.from({ length: shape.loops }, async () => {
    for (;;) {
      const summary = await runOnce(app, { db, batchSize: shape.batchSize, slots: shape.slots, budget: Infinity });
      roundTrips += summary.roundTrips;
      succeeded += summary.succeeded;
      if (summary.claimed === 0) return;
    }
  }));
  return { roundTrips, succeeded };
}

/** Bulk enqueue and burn-down of `count` no-op jobs on a fresh database. */
export async function akadzeThroughput(driver: AkadzeDriver, count: number): Promise<Throughput> {
  const target = await openAkadze(driver, "tp");
  let transactions: number | null = null;
  let result: Omit<Throughput, "transactionsPerJob">;
  try {
    const before = target.database === null ? NaN : await transactionsIn(target.database);
    const { app, noop } = noopApp();
    const enqueueMs = await enqueueNoops(noop, target.db, count);
    const { ms: processMs, value } = await timed(() => drain(app, target.db, BURN_DOWN));
    if (value.succeeded !== count) throw new Error(`akadze over ${driver} ran ${value.succeeded} of ${count} jobs`);
    result = { enqueuePerSec: rate(count, enqueueMs), processPerSec: rate(count, processMs), enqueueMs, processMs };
    await target.close(async () => { if (target.database !== null) transactions = (await transactionsIn(target.database)) - before; });
  } catch (error) {
    await target.close().catch(() => {});
    throw error;
  }
  return { ...result, transactionsPerJob: transactions === null ? null : transactions / count };
}

export interface StatementsPerJob {
  batchSize: number;
  jobs: number;
  /** runOnce's own count (claims, completions, heartbeats), the empty closing claim included. */
  processing: number;
  enqueue: number;
  perJob: number;
  /** The endpoint's count of HTTP requests for the same work (neon drivers only). */
  httpRequestsPerJob: number | null;
}

/** Statements per job at one batch size: enqueue, then one runOnce loop until a claim finds nothing. */
export async function statementsPerJob(driver: AkadzeDriver, batchSize: number, jobs: number): Promise<StatementsPerJob> {
  const target = await openAkadze(driver, `spj${batchSize}`);
  try {
    const { app, noop } = noopApp();
    const before = target.requests();
    await enqueueNoops(noop, target.db, jobs);
    const enqueue = Math.ceil(jobs / ENQUEUE_CHUNK);
    const { roundTrips } = await drain(app, target.db, { loops: 1, batchSize, slots: Math.min(batchSize, 50) });
    const after = target.requests();
    return {
      batchSize, jobs, processing: roundTrips, enqueue, perJob: (roundTrips + enqueue) / jobs,
      httpRequestsPerJob: before === null || after === null ? null : (after - before) / jobs,
    };
  } finally {
    await target.close();
  }
}

export interface Latency { p50: number; p99: number; max: number; samples: number; how: string }

function latencyApp(): { app: App; task: Task<v.ObjectSchema<{ t: v.NumberSchema<undefined> }, undefined>>; seen: number[] } {
  const seen: number[] = [];
  const app = createApp();
  const task = app.task("bench.latency", { args: v.object({ t: v.number() }) }, async ({ t }) => { seen.push(wallMs() - t); });
  return { app, task, seen };
}

function summarize(seen: number[], how: string): Latency {
  return { p50: percentile(seen, 50), p99: percentile(seen, 99), max: Math.max(...seen), samples: seen.length, how };
}

/** Slots of the long-lived worker (`runWorker`), in the latency and worker throughput measurements. */
export const WORKER_SLOTS = 8;

/**
 * Enqueue-to-start latency with the long-lived worker (`runWorker`, its default idle polling from 50 ms
 * backing off to 2 s); jobs arrive one at a time, 5-25 ms apart.
 */
export async function workerLatency(driver: AkadzeDriver, samples: number): Promise<Latency> {
  const target = await openAkadze(driver, "lat");
  const { app, task, seen } = latencyApp();
  const stop = new AbortController();
  const worker = runWorker(app, { db: target.db, slots: WORKER_SLOTS, signal: stop.signal });
  try {
    for (const counted of [false, true]) { // a few uncounted jobs first warm the connections
      seen.length = 0;
      const n = counted ? samples : 5;
      for (let i = 0; i < n; i++) {
        await task.using(target.db).enqueue({ t: wallMs() });
        await sleep(5 + Math.random() * 20);
      }
      while (seen.length < n) await sleep(20);
    }
  } finally {
    stop.abort();
    await worker;
    await target.close();
  }
  return summarize(seen, `runWorker, slots ${WORKER_SLOTS}, default polling`);
}

/** Burn-down by the long-lived worker: one refilling invocation per queue, claims sized to the free slots. */
export async function workerThroughput(driver: AkadzeDriver, count: number): Promise<Throughput> {
  const target = await openAkadze(driver, "wk");
  try {
    const { app, noop } = noopApp();
    const enqueueMs = await enqueueNoops(noop, target.db, count);
    const stop = new AbortController();
    let succeeded = 0;
    let allDone!: () => void;
    const done = new Promise<void>((resolve) => { allDone = resolve; });
    const { ms: processMs } = await timed(async () => {
      const worker = runWorker(app, {
        db: target.db, slots: WORKER_SLOTS, signal: stop.signal,
        onInvocation: (s) => { succeeded += s.succeeded; if (succeeded >= count) allDone(); },
      });
      await done;
      stop.abort();
      await worker;
    });
    return { enqueuePerSec: rate(count, enqueueMs), processPerSec: rate(count, processMs), enqueueMs, processMs, transactionsPerJob: null };
  } finally {
    await target.close();
  }
}

/** Enqueue-to-start latency of a nudged invocation: enqueue, then runOnce right away (what an HTTP route does). */
export async function nudgedLatency(driver: AkadzeDriver, samples: number): Promise<Latency> {
  const target = await openAkadze(driver, "nudge");
  const { app, task, seen } = latencyApp();
  try {
    for (const counted of [false, true]) {
      seen.length = 0;
      for (let i = 0; i < (counted ? samples : 5); i++) {
        await task.using(target.db).enqueue({ t: wallMs() });
        await runOnce(app, { db: target.db, batchSize: 1, slots: 1 });
      }
    }
  } finally {
    await target.close();
  }
  return summarize(seen, "enqueue, then runOnce");
}

export interface IdleCost { roundTrips: number; medianMs: number; p99Ms: number; finishedJobsInTable: number }

/** An invocation that finds nothing to do, on a table holding `finished` finished jobs. */
export async function idleInvocation(driver: AkadzeDriver, finished: number, samples: number): Promise<IdleCost> {
  const target: AkadzeTarget = await openAkadze(driver, "idle");
  try {
    const { app, noop } = noopApp();
    if (finished > 0) {
      await enqueueNoops(noop, target.db, finished);
      await drain(app, target.db, BURN_DOWN);
    }
    await runOnce(app, { db: target.db }); // warm the connection
    const ms: number[] = [];
    let roundTrips = 0;
    for (let i = 0; i < samples; i++) {
      const { ms: took, value } = await timed(() => runOnce(app, { db: target.db }));
      roundTrips = Math.max(roundTrips, value.roundTrips);
      ms.push(took);
    }
    return { roundTrips, medianMs: median(ms), p99Ms: percentile(ms, 99), finishedJobsInTable: finished };
  } finally {
    await target.close();
  }
}
