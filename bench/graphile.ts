// graphile-worker on the same Postgres, set up as well as its installed version allows.
import { createRequire } from "node:module";
import pg from "pg";
import { Logger, run, runMigrations, type Runner, type RunnerOptions } from "graphile-worker";
import { transactionsIn, withDatabase } from "./databases.js";
import { ENQUEUE_CHUNK, type Latency, type Throughput } from "./akadze.js";
import { percentile, rate, sleep, timed, wallMs } from "./stats.js";

export const GRAPHILE_VERSION: string = createRequire(import.meta.url)("graphile-worker/package.json").version;
/** Local queue and batched completion arrived in 0.17; older versions fetch and complete one job per statement. */
export const GRAPHILE_BATCHING = !/^0\.(\d|1[0-6])\./.test(GRAPHILE_VERSION);
/**
 * Jobs run at once (one connection each; its pool gets one more for LISTEN). 20 was its best on the
 * 2-core benchmark machine: 5 and 10 were slower, 40 and 80 slower still.
 */
export const GRAPHILE_CONCURRENCY = 20;

const silent = new Logger(() => () => {});
// Its success log line is built even when the logger drops it; the other systems log nothing either.
process.env.NO_LOG_SUCCESS = "1";

export function graphileSettings(): string {
  const batching = GRAPHILE_BATCHING ? "localQueue.size 500, completeJobBatchDelay 0" : "no batching (localQueue/completeJobBatchDelay need 0.17)";
  return `graphile-worker ${GRAPHILE_VERSION}: concurrency ${GRAPHILE_CONCURRENCY}, ${batching}, add_jobs() bulk insert, ${ENQUEUE_CHUNK} per statement, LISTEN/NOTIFY`;
}

function runnerOptions(pool: pg.Pool): RunnerOptions {
  const options: RunnerOptions = { pgPool: pool, logger: silent, concurrency: GRAPHILE_CONCURRENCY, noHandleSignals: true, pollInterval: 1000 };
  if (GRAPHILE_BATCHING) {
    (options as any).preset = { worker: { localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } };
  }
  return options;
}

/** The bulk API: `add_jobs(job_spec[])`, the function graphile's own `addJobs` calls. */
async function addJobs(pool: pg.Pool, specs: { identifier: string; payload: unknown }[]): Promise<void> {
  await pool.query(
    "select id from graphile_worker.add_jobs(array(select json_populate_recordset(null::graphile_worker.job_spec, $1::json)))",
    [JSON.stringify(specs)],
  );
}

async function untilComplete(runner: Runner, count: number): Promise<void> {
  let done = 0;
  await new Promise<void>((resolve, reject) => {
    runner.events.on("job:complete", () => { if (++done === count) resolve(); });
    runner.promise.catch(reject);
  });
}

export async function graphileThroughput(count: number): Promise<Throughput> {
  return withDatabase("tp_graphile", async (database) => {
    const pool = new pg.Pool({ connectionString: database.url, max: GRAPHILE_CONCURRENCY + 1 });
    let ended = false;
    try {
      await runMigrations(runnerOptions(pool));
      const before = await transactionsIn(database.name);
      const { ms: enqueueMs } = await timed(async () => {
        for (let i = 0; i < count; i += ENQUEUE_CHUNK) {
          await addJobs(pool, Array.from({ length: Math.min(ENQUEUE_CHUNK, count - i) }, () => ({ identifier: "noop", payload: {} })));
        }
      });
      const { ms: processMs } = await timed(async () => {
        const runner = await run({ ...runnerOptions(pool), taskList: { noop: async () => {} } });
        await untilComplete(runner, count);
        await runner.stop();
      });
      const left = Number((await pool.query("select count(*) from graphile_worker.jobs")).rows[0].count);
      if (left !== 0) throw new Error(`graphile-worker left ${left} jobs`);
      await pool.end();
      ended = true;
      const transactions = (await transactionsIn(database.name)) - before - 1; // minus the count above
      return { enqueuePerSec: rate(count, enqueueMs), processPerSec: rate(count, processMs), enqueueMs, processMs, transactionsPerJob: transactions / count };
    } finally {
      if (!ended) await pool.end();
    }
  });
}

/** Enqueue-to-start latency with its long-lived runner (woken by LISTEN/NOTIFY). */
export async function graphileLatency(samples: number): Promise<Latency> {
  return withDatabase("lat_graphile", async (database) => {
    const pool = new pg.Pool({ connectionString: database.url, max: GRAPHILE_CONCURRENCY + 1 });
    const seen: number[] = [];
    try {
      await runMigrations(runnerOptions(pool));
      const runner = await run({ ...runnerOptions(pool), taskList: { probe: async (payload: any) => { seen.push(wallMs() - payload.t); } } });
      for (const counted of [false, true]) {
        seen.length = 0;
        const n = counted ? samples : 5;
        for (let i = 0; i < n; i++) {
          await pool.query("select graphile_worker.add_job('probe', json_build_object('t', $1::float8))", [wallMs()]);
          await sleep(5 + Math.random() * 20);
        }
        while (seen.length < n) await sleep(10);
      }
      await runner.stop();
    } finally {
      await pool.end();
    }
    return { p50: percentile(seen, 50), p99: percentile(seen, 99), max: Math.max(...seen), samples: seen.length, how: "long-lived runner, LISTEN/NOTIFY" };
  });
}
