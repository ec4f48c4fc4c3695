// pg-boss on the same Postgres, with its best settings for per-job handlers.
import { createRequire } from "node:module";
import pg from "pg";
import PgBoss from "pg-boss";
import { transactionsIn, withDatabase } from "./databases.js";
import { BURN_DOWN, ENQUEUE_CHUNK, type Latency, type Throughput } from "./akadze.js";
import { percentile, rate, sleep, timed, wallMs } from "./stats.js";
import { POOL_SIZE } from "./akadze-db.js";

export const PGBOSS_VERSION: string = createRequire(import.meta.url)("pg-boss/package.json").version;
/**
 * The same shape as akadze's burn-down: `workers` polling loops fetching `batchSize` jobs each. pg-boss
 * completes a fetched batch in one statement once the handler resolves, and waits out the rest of its
 * polling interval (0.5 s at least) after a fetch that took less.
 */
export const PGBOSS_WORK = { workers: BURN_DOWN.loops, batchSize: BURN_DOWN.batchSize, pollingIntervalSeconds: 0.5 };

export function pgbossSettings(): string {
  const w = PGBOSS_WORK;
  return `pg-boss ${PGBOSS_VERSION}: ${w.workers} work() loops, batchSize ${w.batchSize}, pollingIntervalSeconds ${w.pollingIntervalSeconds} (its minimum), ` +
    `insert() bulk, ${ENQUEUE_CHUNK} per statement, maintenance and schedules off, pool ${POOL_SIZE}`;
}

async function startBoss(url: string): Promise<PgBoss> {
  const boss = new PgBoss({ connectionString: url, max: POOL_SIZE, supervise: false, schedule: false });
  boss.on("error", (error) => { console.error("pg-boss error:", error); });
  await boss.start();
  return boss;
}

async function openJobs(url: string, queue: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query("select count(*) from pgboss.job where name = $1 and state < 'completed'", [queue])).rows[0].count);
  } finally {
    await client.end();
  }
}

export async function pgbossThroughput(count: number): Promise<Throughput> {
  return withDatabase("tp_pgboss", async (database) => {
    const boss = await startBoss(database.url);
    let stopped = false;
    let polls = 0;
    try {
      await boss.createQueue("noop");
      const before = await transactionsIn(database.name);
      const { ms: enqueueMs } = await timed(async () => {
        for (let i = 0; i < count; i += ENQUEUE_CHUNK) {
          await boss.insert(Array.from({ length: Math.min(ENQUEUE_CHUNK, count - i) }, () => ({ name: "noop", data: {} })));
        }
      });
      const { ms: processMs } = await timed(async () => {
        let handled = 0;
        let allHandled!: () => void;
        const handledAll = new Promise<void>((resolve) => { allHandled = resolve; });
        for (let w = 0; w < PGBOSS_WORK.workers; w++) {
          await boss.work("noop", { batchSize: PGBOSS_WORK.batchSize, pollingIntervalSeconds: PGBOSS_WORK.pollingIntervalSeconds }, async (jobs) => {
            await Promise.all(jobs.map(async () => {})); // the per-job handler, once per job
            handled += jobs.length;
            if (handled >= count) allHandled();
          });
        }
        await handledAll;
        // Its completion statement is not awaited by the worker loop: the burn-down ends when the rows say so.
        for (polls = 1; await openJobs(database.url, "noop") > 0; polls++) await sleep(5);
      });
      await boss.stop({ graceful: false, wait: true });
      stopped = true;
      const transactions = (await transactionsIn(database.name)) - before - polls; // not the benchmark's own polls
      return { enqueuePerSec: rate(count, enqueueMs), processPerSec: rate(count, processMs), enqueueMs, processMs, transactionsPerJob: transactions / count };
    } finally {
      if (!stopped) await boss.stop({ graceful: false, wait: true });
    }
  });
}

/** Enqueue-to-start latency with a long-lived work() loop at its minimum polling interval. */
export async function pgbossLatency(samples: number): Promise<Latency> {
  return withDatabase("lat_pgboss", async (database) => {
    const boss = await startBoss(database.url);
    const seen: number[] = [];
    try {
      await boss.createQueue("probe");
      await boss.work<{ t: number }>("probe", { batchSize: 50, pollingIntervalSeconds: PGBOSS_WORK.pollingIntervalSeconds }, async (jobs) => {
        for (const job of jobs) seen.push(wallMs() - job.data.t);
      });
      for (const counted of [false, true]) {
        seen.length = 0;
        const n = counted ? samples : 5;
        for (let i = 0; i < n; i++) {
          await boss.send("probe", { t: wallMs() });
          await sleep(5 + Math.random() * 20);
        }
        while (seen.length < n) await sleep(10);
      }
    } finally {
      await boss.stop({ graceful: false, wait: true });
    }
    return { p50: percentile(seen, 50), p99: percentile(seen, 99), max: Math.max(...seen), samples: seen.length, how: "work() loop, batchSize 50, 0.5 s polling" };
  });
}
