// graphile-worker on the same Postgres, with its local queue and batched completion (0.17+), swept over a few
// configurations; the fastest is the head-to-head entry and the fastest at concurrency 10 meets runWorker.
import pg from "pg";
import type { Runner, RunnerOptions } from "graphile-worker-latest";
import { GRAPHILE_VERSION, graphileWorker } from "./peers.js";
import { startedInDatabase, transactionsIn, withDatabase } from "./databases.js";
import { DRAINS, drainsOf, ENQUEUE_CHUNK, type DrainTimes, type Throughput } from "./akadze.js";
import { latencyProbe, type LatencyConsumer } from "./latency.js";
import { timed } from "./stats.js";
import { timedWithCpu, type CpuPerJob } from "./pg-cpu.js";
import { tryConfig, type SweepEntry } from "./sweep.js";

export { GRAPHILE_VERSION };
const { Logger, run, runMigrations } = graphileWorker;

/**
 * One configuration: jobs run at once, jobs its pool locks per fetch (`localQueue.size`), and how long a
 * completion (and a failure) waits to be batched with others (`completeJobBatchDelay`, `failJobBatchDelay`).
 */
export interface GraphileConfig { concurrency: number; localQueueSize: number; batchDelayMs: number }

/**
 * The sweep, around its own advice: the release notes of 0.17 suggest localQueue = concurrency + 1, its
 * performance page was measured with concurrency 24, localQueue 500 and batch delays of 0; larger and
 * smaller neighbours of those, and a 10 ms delay.
 */
export const GRAPHILE_SWEEP: GraphileConfig[] = [
  { concurrency: 10, localQueueSize: 11, batchDelayMs: 0 },
  { concurrency: 10, localQueueSize: 100, batchDelayMs: 0 },
  { concurrency: 10, localQueueSize: 500, batchDelayMs: 0 },
  { concurrency: 10, localQueueSize: 500, batchDelayMs: 10 },
  { concurrency: 20, localQueueSize: 500, batchDelayMs: 0 },
  { concurrency: 20, localQueueSize: 500, batchDelayMs: 10 },
  { concurrency: 24, localQueueSize: 500, batchDelayMs: 0 },
  { concurrency: 40, localQueueSize: 1000, batchDelayMs: 0 },
  { concurrency: 40, localQueueSize: 1000, batchDelayMs: 10 },
];
export const GRAPHILE_QUICK_SWEEP: GraphileConfig[] = [GRAPHILE_SWEEP[2], GRAPHILE_SWEEP[6]];

const silent = new Logger(() => () => {});
// Its success log line is built even when the logger drops it; the other systems log nothing either.
process.env.NO_LOG_SUCCESS = "1";

export function graphileLabel(c: GraphileConfig): string {
  return `graphile-worker ${GRAPHILE_VERSION}: concurrency ${c.concurrency}, localQueue.size ${c.localQueueSize}, ` +
    `completeJobBatchDelay/failJobBatchDelay ${c.batchDelayMs} ms, pool ${c.concurrency + 2}, LISTEN/NOTIFY`;
}

export function graphileSettings(c: GraphileConfig): string {
  return `${graphileLabel(c)}; add_jobs() bulk insert, ${ENQUEUE_CHUNK} per statement`;
}

function openPool(url: string, c: GraphileConfig): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: c.concurrency + 2 });
  // graphile-worker checks for both handlers: an idle client's error and a connected client's.
  pool.on("error", (error) => { console.error("graphile-worker pool error:", error); });
  pool.on("connect", (client) => { client.on("error", (error) => { console.error("graphile-worker client error:", error); }); });
  return pool;
}

function runnerOptions(pool: pg.Pool, c: GraphileConfig): RunnerOptions {
  return {
    pgPool: pool, logger: silent, concurrency: c.concurrency, noHandleSignals: true, pollInterval: 1000,
    preset: { worker: { localQueue: { size: c.localQueueSize }, completeJobBatchDelay: c.batchDelayMs, failJobBatchDelay: c.batchDelayMs } },
  };
}

/** The bulk API: `add_jobs(job_spec[])`, the function graphile's own `addJobs` calls. `runAt`: when they are due (default now). */
async function addNoops(pool: pg.Pool, count: number, runAt?: Date): Promise<void> {
  for (let i = 0; i < count; i += ENQUEUE_CHUNK) {
    const specs = Array.from({ length: Math.min(ENQUEUE_CHUNK, count - i) }, () => ({ identifier: "noop", payload: {}, ...(runAt ? { run_at: runAt.toISOString() } : {}) }));
    await pool.query(
      "select id from graphile_worker.add_jobs(array(select json_populate_recordset(null::graphile_worker.job_spec, $1::json)))",
      [JSON.stringify(specs)],
    );
  }
}

async function untilComplete(runner: Runner, count: number): Promise<void> {
  let done = 0;
  await new Promise<void>((resolve, reject) => {
    runner.events.on("job:complete", () => { if (++done === count) resolve(); });
    runner.promise.catch(reject);
  });
}

/**
 * Starts a runner over the queued no-op jobs and stops it once all `count` completed (batched completions
 * flushed), with its CPU per job (`database`'s backends too, where given).
 */
async function burnDown(pool: pg.Pool, c: GraphileConfig, count: number, database: string | null): Promise<{ ms: number; cpu: CpuPerJob }> {
  const { ms, cpu } = await timedWithCpu(database, count, async () => {
    const runner = await run({ ...runnerOptions(pool, c), taskList: { noop: async () => {} } });
    await untilComplete(runner, count);
    await runner.stop();
  });
  const left = Number((await pool.query("select count(*) from graphile_worker.jobs where run_at <= now()")).rows[0].count);
  if (left !== 0) throw new Error(`graphile-worker (${graphileLabel(c)}) left ${left} jobs`);
  return { ms, cpu };
}

/** Bulk enqueue of `count` jobs, then their burn-down, each timed. */
async function timedDrain(pool: pg.Pool, c: GraphileConfig, count: number, database: string | null = null): Promise<DrainTimes> {
  const { ms: enqueueMs } = await timed(() => addNoops(pool, count));
  const { ms: processMs, cpu } = await burnDown(pool, c, count, database);
  return { enqueueMs, processMs, cpu };
}

/** Every configuration of `configs` on `jobs` jobs, in one database. */
export async function graphileSweep(configs: GraphileConfig[], jobs: number): Promise<SweepEntry<GraphileConfig>[]> {
  return withDatabase("sweep_graphile", async (database) => {
    const out: SweepEntry<GraphileConfig>[] = [];
    for (const c of configs) {
      out.push(await tryConfig({ system: "graphile-worker", settings: graphileLabel(c), config: c, jobs }, async () => {
        const pool = openPool(database.url, c);
        try {
          await runMigrations(runnerOptions(pool, c));
          await pool.query("delete from graphile_worker._private_jobs"); // what a failed configuration may have left (jobs is a view)
          // DRAINS burn-downs, the last one recorded (as the head-to-head measures).
          return (await drainsOf(jobs, () => timedDrain(pool, c, jobs))).processPerSec;
        } finally {
          await pool.end();
        }
      }));
    }
    return out;
  });
}

/** `delayed`: jobs due in a day, enqueued beside the burn-down first (the "delayed" section), then analyzed. */
export async function graphileThroughput(count: number, c: GraphileConfig, delayed = 0): Promise<Throughput> {
  return withDatabase("tp_graphile", async (database) => {
    const pool = openPool(database.url, c);
    let ended = false;
    try {
      await runMigrations(runnerOptions(pool, c));
      if (delayed > 0) {
        await addNoops(pool, delayed, new Date(Date.now() + 86_400_000));
        await pool.query("analyze graphile_worker._private_jobs");
      }
      const before = await transactionsIn(database.name);
      // Twice on the same database: the first burn-down cold, the second measured (as akadze's).
      const result = await drainsOf(count, () => timedDrain(pool, c, count, database.name));
      await pool.end();
      ended = true;
      const transactions = (await transactionsIn(database.name)) - before - DRAINS; // minus the counts in burnDown
      return { ...result, transactionsPerJob: transactions / (DRAINS * count) };
    } finally {
      if (!ended) await pool.end();
    }
  });
}

/** An idle runner (woken by LISTEN/NOTIFY) as a latency consumer, one `add_job` per job. */
export async function graphileConsumer(c: GraphileConfig): Promise<LatencyConsumer> {
  const probe = latencyProbe();
  const { started: pool, close } = await startedInDatabase("lat_graphile", async (database, onClose) => {
    const pool = openPool(database.url, c);
    onClose(() => pool.end());
    await runMigrations(runnerOptions(pool, c));
    const runner = await run({ ...runnerOptions(pool, c), taskList: { probe: async (payload: any) => { probe.record(payload.t); } } });
    onClose(() => runner.stop());
    return pool;
  });
  return {
    probe, how: `runner, concurrency ${c.concurrency}, localQueue.size ${c.localQueueSize}, LISTEN/NOTIFY`, close,
    enqueue: async (t) => { await pool.query("select graphile_worker.add_job('probe', json_build_object('t', $1::float8))", [t]); },
  };
}
