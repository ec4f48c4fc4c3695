// pg-boss on the same Postgres, tuned by a small sweep: its work() loops (batchSize, several loops, the
// shortest polling interval it accepts) and plain fetch()/complete() loops, which skip work()'s wait.
import pg from "pg";
import { insertJobs, newPgBoss, PGBOSS_MODERN, PGBOSS_VERSION, type PgBoss } from "./peers.js";
import { startedInDatabase, transactionsIn, withDatabase } from "./databases.js";
import { DRAINS, drainsOf, ENQUEUE_CHUNK, type Throughput } from "./akadze.js";
import { latencyProbe, type LatencyConsumer } from "./latency.js";
import { sleep, timed } from "./stats.js";
import { timedWithCpu, type CpuPerJob } from "./pg-cpu.js";
import { POOL_SIZE } from "./akadze-db.js";
import { tryConfig, type SweepEntry } from "./sweep.js";

export { PGBOSS_VERSION };

/**
 * `work`: `loops` work() loops of `batchSize`; after a fetch that took less than its polling interval
 * (0.5 s at least) a loop waits out the rest. `fetch`: `loops` loops of fetch(batchSize), run each job,
 * complete(ids), with no wait while jobs come back.
 */
export interface PgBossConfig {
  mode: "work" | "fetch"; loops: number; batchSize: number;
  /** work() only, pg-boss 11+: `burstWhenBatchFull`, fetch again at once while a fetch comes back full. */
  burst?: boolean;
}
const POLLING_SECONDS = 0.5;

const BURSTS: PgBossConfig[] = PGBOSS_MODERN ? [{ mode: "work", loops: 4, batchSize: 500, burst: true }, { mode: "work", loops: 8, batchSize: 250, burst: true }] : [];
export const PGBOSS_SWEEP: PgBossConfig[] = [
  { mode: "work", loops: 4, batchSize: 500 },
  { mode: "work", loops: 8, batchSize: 250 },
  ...BURSTS,
  { mode: "fetch", loops: 2, batchSize: 500 },
  { mode: "fetch", loops: 4, batchSize: 250 },
  { mode: "fetch", loops: 4, batchSize: 500 },
];
export const PGBOSS_QUICK_SWEEP: PgBossConfig[] = [BURSTS[0] ?? PGBOSS_SWEEP[0], PGBOSS_SWEEP[BURSTS.length + 2]];

export function pgbossLabel(c: PgBossConfig): string {
  const how = c.mode === "work"
    ? `work() loops, pollingIntervalSeconds ${POLLING_SECONDS} (its minimum)${c.burst ? ", burstWhenBatchFull" : ""}`
    : "fetch()/complete() loops";
  return `pg-boss ${PGBOSS_VERSION}: ${c.loops} ${how}, batchSize ${c.batchSize}, pool ${POOL_SIZE}`;
}

export function pgbossSettings(c: PgBossConfig): string {
  return `${pgbossLabel(c)}; a per-job handler; insert() bulk, ${ENQUEUE_CHUNK} per statement; maintenance and schedules off`;
}

async function startBoss(url: string): Promise<PgBoss> {
  const boss = newPgBoss({ connectionString: url, max: POOL_SIZE, supervise: false, schedule: false, ...(PGBOSS_MODERN ? { useListenNotify: true } : {}) });
  boss.on("error", (error) => { console.error("pg-boss error:", error); });
  await boss.start();
  return boss;
}

/** Stops at once and waits for it (10 takes `wait`; 12 waits by itself). */
async function stopBoss(boss: PgBoss): Promise<void> {
  await boss.stop((PGBOSS_MODERN ? { graceful: false } : { graceful: false, wait: true }) as { graceful: boolean });
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

async function insertNoops(boss: PgBoss, queue: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += ENQUEUE_CHUNK) {
    await insertJobs(boss, queue, Array.from({ length: Math.min(ENQUEUE_CHUNK, count - i) }, () => ({ data: {} })));
  }
}

/** Burns down `count` queued jobs of `queue`; returns the wall ms and the benchmark's own count queries. */
async function burnDown(boss: PgBoss, url: string, queue: string, c: PgBossConfig, count: number, database: string | null = null): Promise<{ ms: number; polls: number; cpu: CpuPerJob }> {
  let polls = 0;
  const runJob = async () => {}; // the per-job handler
  const { ms, cpu } = await timedWithCpu(database, count, async () => {
    if (c.mode === "fetch") {
      await Promise.all(Array.from({ length: c.loops }, async () => {
        for (;;) {
          const jobs = await boss.fetch(queue, { batchSize: c.batchSize });
          if (jobs.length === 0) return;
          await Promise.all(jobs.map(runJob));
          await boss.complete(queue, jobs.map((j) => j.id));
        }
      }));
    } else {
      let handled = 0;
      let allHandled!: () => void;
      const handledAll = new Promise<void>((resolve) => { allHandled = resolve; });
      for (let w = 0; w < c.loops; w++) {
        await boss.work(queue, { batchSize: c.batchSize, pollingIntervalSeconds: POLLING_SECONDS, ...(c.burst ? { burstWhenBatchFull: true } : {}) }, async (jobs) => {
          await Promise.all(jobs.map(runJob));
          handled += jobs.length;
          if (handled >= count) allHandled();
        });
      }
      await handledAll;
      // Its completion statement is not awaited by the work() loop: the burn-down ends when the rows say so.
      for (polls = 1; await openJobs(url, queue) > 0; polls++) await sleep(5);
      await boss.offWork(queue);
    }
  });
  return { ms, polls, cpu };
}

/** Every configuration on `jobs` jobs, in one database (a queue per configuration). */
export async function pgbossSweep(configs: PgBossConfig[], jobs: number): Promise<SweepEntry<PgBossConfig>[]> {
  return withDatabase("sweep_pgboss", async (database) => {
    const boss = await startBoss(database.url);
    try {
      const out: SweepEntry<PgBossConfig>[] = [];
      for (const [i, c] of configs.entries()) {
        out.push(await tryConfig({ system: "pg-boss", settings: pgbossLabel(c), config: c, jobs }, async () => {
          const queue = `noop${i}`;
          await boss.createQueue(queue);
          // DRAINS burn-downs, the last one recorded (as the head-to-head measures).
          return (await drainsOf(jobs, async () => {
            const { ms: enqueueMs } = await timed(() => insertNoops(boss, queue, jobs));
            return { enqueueMs, processMs: (await burnDown(boss, database.url, queue, c, jobs)).ms };
          })).processPerSec;
        }));
      }
      return out;
    } finally {
      await stopBoss(boss);
    }
  });
}

export async function pgbossThroughput(count: number, c: PgBossConfig): Promise<Throughput> {
  return withDatabase("tp_pgboss", async (database) => {
    const boss = await startBoss(database.url);
    let stopped = false;
    try {
      await boss.createQueue("noop");
      const before = await transactionsIn(database.name);
      // Twice on the same database: the first burn-down cold, the second measured (as akadze's).
      let ownCounts = 0; // the benchmark's own statements
      const result = await drainsOf(count, async () => {
        const { ms: enqueueMs } = await timed(() => insertNoops(boss, "noop", count));
        const { ms: processMs, polls, cpu } = await burnDown(boss, database.url, "noop", c, count, database.name);
        if (c.mode === "fetch" && await openJobs(database.url, "noop") > 0) throw new Error("pg-boss left jobs open");
        ownCounts += polls + (c.mode === "fetch" ? 1 : 0);
        return { enqueueMs, processMs, cpu };
      });
      await stopBoss(boss);
      stopped = true;
      const transactions = (await transactionsIn(database.name)) - before - ownCounts;
      return { ...result, transactionsPerJob: transactions / (DRAINS * count) };
    } finally {
      if (!stopped) await stopBoss(boss);
    }
  });
}

/** An idle work() loop at its minimum polling interval as a latency consumer. */
export async function pgbossConsumer(): Promise<LatencyConsumer> {
  const probe = latencyProbe();
  const { started: boss, close } = await startedInDatabase("lat_pgboss", async (database, onClose) => {
    const boss = await startBoss(database.url);
    onClose(() => stopBoss(boss));
    // pg-boss 11+ wakes a queue's workers by NOTIFY when the queue asks for it.
    await boss.createQueue("probe", PGBOSS_MODERN ? { notify: true } : {});
    await boss.work<{ t: number }>("probe", { batchSize: 50, pollingIntervalSeconds: POLLING_SECONDS }, async (jobs) => {
      for (const job of jobs) probe.record(job.data.t);
    });
    return boss;
  });
  return {
    probe, close, how: `work() loop, batchSize 50, ${POLLING_SECONDS} s polling${PGBOSS_MODERN ? ", queue notify (LISTEN/NOTIFY)" : ""}`,
    enqueue: async (t) => { await boss.send("probe", { t }); },
  };
}
