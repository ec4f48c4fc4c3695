// What the benchmark measures of akadze's runOnce loops: bulk enqueue, burn-down and statements per job.
// (runWorker, latency and the cron tick: akadze-worker.ts; scale-out and claim cost: scale-out.ts.)
import { sql } from "drizzle-orm";
import type { App, Db, Duration, Retention, Task } from "../src/index.js";
import { query } from "../src/db/query.js";
import { CURRENT, type AkadzeLib } from "./baseline.js";
import { openAkadze, type AkadzeDriver } from "./akadze-db.js";
import { transactionsIn } from "./databases.js";
import { rate, timed } from "./stats.js";
import type { SweepEntry } from "./sweep.js";
import { timedWithCpu, type CpuPerJob } from "./pg-cpu.js";

/** How a burn-down runs: `loops` runOnce loops side by side, each claiming `batchSize` and running `slots` at once. */
export interface BurnDownShape { loops: number; batchSize: number; slots: number }
/**
 * The shapes akadze's sweep tries (batch 500, as the issue measured, then 1000 and 2000: a claim's and a
 * settle's Postgres cost per job falls with the batch, and two loops of 2000 ran 8 % faster than of 1000 in three
 * alternations here, three loops of 1000 no faster, batches of 4000 slower); the fastest is the head-to-head entry.
 */
export const BURN_DOWN_SHAPES: BurnDownShape[] = [
  { loops: 1, batchSize: 500, slots: 50 }, { loops: 2, batchSize: 500, slots: 50 }, { loops: 4, batchSize: 500, slots: 50 },
  { loops: 2, batchSize: 1000, slots: 100 }, { loops: 2, batchSize: 2000, slots: 200 },
];
/** The shape of the warm-up, before any sweep ran. */
export const BURN_DOWN = BURN_DOWN_SHAPES[1];

export function shapeLabel(shape: BurnDownShape): string {
  return `${shape.loops} runOnce loop${shape.loops > 1 ? "s" : ""}, batchSize ${shape.batchSize}, slots ${shape.slots}, budget Infinity`;
}

/** Jobs per enqueue statement, for every system. */
export const ENQUEUE_CHUNK = 1000;

export interface Throughput {
  enqueuePerSec: number;
  processPerSec: number;
  enqueueMs: number;
  processMs: number;
  /**
   * Postgres transactions (each statement outside a transaction is one) per job, enqueue and processing, from
   * pg_stat_database, over all DRAINS burn-downs (a backend reports its counts late, so they are read once it exited).
   */
  transactionsPerJob: number | null;
  /**
   * The same burn-down run first on the fresh database, unrecorded in the other fields: its backends, planner
   * statistics and caches cold (null where not measured). The fields above are the second burn-down's.
   */
  firstDrainPerSec: number | null;
  /** CPU per job of the recorded burn-down's processing (null where not measured). */
  cpu: CpuPerJob | null;
}

/** How many burn-downs of the same size each measurement runs in its database: the first cold, the second measured. */
export const DRAINS = 2;

/** One burn-down's two timings: its bulk enqueue, and its processing (with its CPU per job, where measured). */
export interface DrainTimes { enqueueMs: number; processMs: number; cpu?: CpuPerJob }

/**
 * Runs `drainOnce` (an enqueue and a burn-down of `count` jobs, timed) DRAINS times in the same database: the
 * last one's rates, and the first one's processing rate as `firstDrainPerSec`.
 */
export async function drainsOf(count: number, drainOnce: () => Promise<DrainTimes>): Promise<Omit<Throughput, "transactionsPerJob">> {
  const times: DrainTimes[] = [];
  for (let n = 1; n <= DRAINS; n++) times.push(await drainOnce());
  const { enqueueMs, processMs, cpu } = times[times.length - 1];
  return {
    enqueuePerSec: rate(count, enqueueMs), processPerSec: rate(count, processMs), enqueueMs, processMs,
    firstDrainPerSec: rate(count, times[0].processMs), cpu: cpu ?? null,
  };
}

export function noopApp(lib: AkadzeLib = CURRENT): { app: App; noop: Task } {
  const app = lib.createApp();
  const noop = app.task("bench.noop", async () => {});
  return { app, noop };
}

/** Inserts `count` jobs, `ENQUEUE_CHUNK` per statement (`delay`: due that much later); returns the milliseconds it took. */
export async function enqueueNoops(noop: Task, db: Db, count: number, delay?: Duration): Promise<number> {
  const args = Array.from({ length: count }, () => ({}));
  const { ms } = await timed(async () => {
    for (let i = 0; i < count; i += ENQUEUE_CHUNK) await noop.using(db, delay === undefined ? {} : { delay }).enqueueMany(args.slice(i, i + ENQUEUE_CHUNK));
  });
  return ms;
}

/** Runs `loops` runOnce loops until a claim comes back empty; returns the summed round trips. */
export async function drain(app: App, db: Db, shape: BurnDownShape, retention?: Retention, runOnce = CURRENT.runOnce): Promise<{ roundTrips: number; succeeded: number }> {
  let roundTrips = 0;
  let succeeded = 0;
  await Promise.all(Array.from({ length: shape.loops }, async () => {
    for (;;) {
      const summary = await runOnce(app, { db, batchSize: shape.batchSize, slots: shape.slots, budget: Infinity, retention });
      roundTrips += summary.roundTrips;
      succeeded += summary.succeeded;
      if (summary.claimed === 0) return;
    }
  }));
  return { roundTrips, succeeded };
}

/** `retention: { keepSucceeded: false }`: the burn-down with no history row per job (the bench's own row). */
export const KEEP_NO_SUCCEEDED: Retention = { keepSucceeded: false };

/**
 * Bulk enqueue and burn-down of `count` no-op jobs, twice on one fresh database (`retention` as runOnce takes
 * it): the first burn-down's rate is `firstDrainPerSec`, the rest is the second's. `lib`: a baseline's akadze.
 */
export async function akadzeThroughput(driver: AkadzeDriver, count: number, shape: BurnDownShape, retention?: Retention, lib: AkadzeLib = CURRENT, delayed = 0): Promise<Throughput> {
  const target = await openAkadze(driver, "tp", { migrate: lib.migrate });
  let transactions: number | null = null;
  let result: Omit<Throughput, "transactionsPerJob">;
  try {
    const { app, noop } = noopApp(lib);
    // `delayed` jobs not due for a day beside the burn-down (the "delayed" section), then analyzed, as autovacuum would.
    if (delayed > 0) {
      await enqueueNoops(noop, target.db, delayed, "1d");
      await query(target.db, sql`analyze akadze.jobs`);
    }
    const before = target.database === null ? NaN : await transactionsIn(target.database);
    result = await drainsOf(count, async () => {
      const enqueueMs = await enqueueNoops(noop, target.db, count);
      let succeeded = 0;
      const { ms: processMs, cpu } = await timedWithCpu(target.database, count, async () => { succeeded = (await drain(app, target.db, shape, retention, lib.runOnce)).succeeded; });
      if (succeeded !== count) throw new Error(`akadze over ${driver} ran ${succeeded} of ${count} jobs`);
      return { enqueueMs, processMs, cpu };
    });
    await target.close(async () => { if (target.database !== null) transactions = (await transactionsIn(target.database)) - before; });
  } catch (error) {
    await target.close().catch(() => {});
    throw error;
  }
  return { ...result, transactionsPerJob: transactions === null ? null : transactions / (DRAINS * count) };
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

/** Every burn-down shape on `jobs` jobs over node-postgres, in one database. */
export async function akadzeSweep(jobs: number): Promise<SweepEntry[]> {
  const target = await openAkadze("node-postgres", "sweep");
  try {
    const { app, noop } = noopApp();
    const out: SweepEntry[] = [];
    for (const shape of BURN_DOWN_SHAPES) {
      // DRAINS burn-downs, the last one recorded (as the head-to-head measures).
      const { processPerSec } = await drainsOf(jobs, async () => {
        const enqueueMs = await enqueueNoops(noop, target.db, jobs);
        const { ms: processMs, value } = await timed(() => drain(app, target.db, shape));
        if (value.succeeded !== jobs) throw new Error(`akadze sweep (${shapeLabel(shape)}) ran ${value.succeeded} of ${jobs} jobs`);
        return { enqueueMs, processMs };
      });
      out.push({ system: "akadze/node-postgres", settings: shapeLabel(shape), config: shape, jobs, processPerSec });
    }
    return out;
  } finally {
    await target.close();
  }
}
