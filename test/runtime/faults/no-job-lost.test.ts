// Faults do not lose work: an HTTP Postgres that fails, delays and drops requests under concurrent
// invocations, and worker processes killed with SIGKILL mid-batch. Every run of a body is counted in
// a side table over node-postgres, then reconciled with the jobs table (test/fixtures/fault-ledger.ts).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { runOnce, type Db, type RunSummary } from "../../../src/index.js";
import { startNeonEndpoint, type NeonEndpoint } from "../../../src/dev/neon-endpoint.js";
import { bundleFixtures, type BundledFixtures } from "../../support/bundle.js";
import { ManualClock } from "../../support/clock.js";
import { neonHttpDb } from "../../support/neon.js";
import { createTestDatabase } from "../../support/postgres.js";
import { CREATE_RUNS_TABLE, faultApp, PLANS, seededRandom, type RunRow } from "../../fixtures/fault-tasks.js";
import { reconcile, type JobRow, type Ledger } from "../../fixtures/fault-ledger.js";

const SEED = Number(process.env.FAULT_SEED ?? 20260601);
const WORKER = fileURLToPath(new URL("../../fixtures/fault-worker.ts", import.meta.url));
const DAY = 24 * 3600_000;

interface Fixture { name: string; url: string; pool: pg.Pool; db: Db; drop: () => Promise<void> }

async function openFixture(prefix: string): Promise<Fixture> {
  const database = await createTestDatabase(prefix);
  const pool = new pg.Pool({ connectionString: database.url, max: 8 });
  await pool.query(CREATE_RUNS_TABLE);
  return { name: database.name, url: database.url, pool, db: drizzle(pool) as unknown as Db, drop: async () => { await pool.end(); await database.drop(); } };
}

/** `count` jobs, the plans in turn, enqueued over node-postgres (the faults are in what follows). */
async function enqueuePlans(f: Fixture, count: number, clock?: () => Date): Promise<void> {
  const { task } = faultApp(f.pool, { runner: "enqueue", clock });
  await task.using(f.db).enqueueMany(Array.from({ length: count }, (_, i) => ({ plan: PLANS[i % PLANS.length] })));
}

/** Clean invocations with a clock far ahead (leases expired, every delay due) until no job is left to run. */
async function finishEverything(f: Fixture, from: number): Promise<number> {
  const { app } = faultApp(f.pool, { runner: "cleanup" });
  let at = from;
  let invocations = 0;
  for (; invocations < 100; invocations++) {
    const open = (await f.pool.query("select count(*)::int as n from akadze.all_jobs where state in ('queued', 'running')")).rows[0].n;
    if (open === 0) break;
    await runOnce(app, { db: f.db, now: () => new Date(at), batchSize: 200, slots: 16 });
    at += DAY;
  }
  return invocations;
}

async function ledgerOf(f: Fixture): Promise<Ledger> {
  const jobs = (await f.pool.query<JobRow>("select id::int, state, attempt, max_attempts, errors, result, args from akadze.all_jobs order by id")).rows;
  const runs = (await f.pool.query<RunRow>("select seq::int, job_id::int, attempt, intent, runner from fault_runs")).rows;
  return reconcile(jobs, runs);
}

function expectNothingLost(ledger: Ledger): void {
  expect(ledger.violations.slice(0, 10)).toEqual([]);
  expect(ledger.losses).toBe(0);
  expect(ledger.states.queued ?? 0).toBe(0);
  expect(ledger.states.running ?? 0).toBe(0);
}

describe("an HTTP Postgres that fails, delays and drops requests", () => {
  const JOBS = 2000;
  const INVOCATIONS = 4;
  const FAULTS = { failRate: 0.08, dropRate: 0.06, delayMs: [0, 4] as [number, number] };
  let f: Fixture;
  let endpoint: NeonEndpoint;
  beforeAll(async () => {
    f = await openFixture("bench_fault_http");
    endpoint = await startNeonEndpoint({ connectionString: f.url, fault: { ...FAULTS, random: seededRandom(SEED) } });
  });
  afterAll(async () => { await endpoint?.close(); await f?.drop(); });

  it("loses no job while concurrent invocations over neon-http run thousands of mixed outcomes", async () => {
    const clock = new ManualClock(new Date());
    await enqueuePlans(f, JOBS, clock.now);
    const http = neonHttpDb(endpoint, f.name) as unknown as Db;
    const { app } = faultApp(f.pool, { clock: clock.now, runner: "http" });
    const summaries: RunSummary[] = [];
    const errors: string[] = [];
    let rounds = 0;
    while (rounds++ < 80) {
      await Promise.all(Array.from({ length: INVOCATIONS }, async () => {
        try {
          summaries.push(await runOnce(app, { db: http, now: clock.now, batchSize: 50, slots: 8 }));
        } catch (error) {
          errors.push(String((error as Error).cause ?? error));
        }
      }));
      // Past every lease (30 s) and the plans' delays: lost leases are recovered by the next round, still faulted.
      clock.advance(40_000);
      const open = (await f.pool.query("select count(*)::int as n from akadze.all_jobs where state in ('queued', 'running')")).rows[0].n;
      if (open === 0) break;
    }
    const { requests, faults } = endpoint.stats;
    const cleanups = await finishEverything(f, clock.now().getTime() + 3600_000);
    const ledger = await ledgerOf(f);
    const acknowledged = summaries.reduce((n, s) => n + s.succeeded, 0);
    const unrecorded = summaries.reduce((n, s) => n + s.lost, 0);
    console.log(`fault suite (neon-http, seed ${SEED}): ${ledger.jobs} jobs, ${INVOCATIONS} concurrent invocations x ${rounds} rounds, ` +
      `${requests} requests, ${faults} faults injected (fail ${FAULTS.failRate}, drop ${FAULTS.dropRate}, delay ${FAULTS.delayMs.join("-")} ms), ` +
      `${errors.length} invocations failed, ${unrecorded} outcomes unconfirmed (response lost), ${ledger.runs} runs, ${ledger.lostOutcomes} outcomes lost ` +
      `(re-runs: ${ledger.rerunSuccesses} after a success), ${ledger.lostClaims} claims lost before start, ` +
      `${ledger.snoozeThenExpiry} snoozes followed by an expiry, ${cleanups} clean invocations, states ${JSON.stringify(ledger.states)}, losses ${ledger.losses}`);
    expectNothingLost(ledger);
    expect(faults).toBeGreaterThan(0);
    // A success an invocation reported is in the table (the table may hold more: a dropped response hides one).
    expect(acknowledged).toBeLessThanOrEqual(ledger.recordedSuccesses);
    expect(ledger.states.succeeded + ledger.states.failed).toBe(JOBS);
  }, 120_000);
});

describe("a worker process killed with SIGKILL mid-batch", () => {
  const JOBS = 600;
  const KILLS = 6;
  let f: Fixture;
  // The worker, bundled once (test/support/bundle.ts): six tsx start-ups were most of the test's time on a loaded machine.
  let worker: BundledFixtures;
  beforeAll(async () => { f = await openFixture("bench_fault_kill"); worker = await bundleFixtures({ "fault-worker": WORKER }); });
  afterAll(async () => { worker?.remove(); await f?.drop(); });

  /** Starts the fixture worker and kills it once `after` bodies have started (or it runs out of work). */
  function runAndKill(after: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [worker.path("fault-worker")], {
        env: { ...process.env, FAULT_DATABASE_URL: f.url }, stdio: ["ignore", "pipe", "pipe"],
      });
      let started = 0;
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
        started += chunk.split(".").length - 1;
        if (started >= after || chunk.includes("idle")) child.kill("SIGKILL");
      });
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => { stderr += chunk; });
      child.on("error", reject);
      child.on("exit", (code, signal) => {
        if (signal === "SIGKILL") resolve(started);
        else reject(new Error(`the worker exited on its own (code ${code}): ${stderr}`));
      });
    });
  }

  it("loses no job: every run is accounted for and only re-runs after a lost lease exceed the attempts", async () => {
    await enqueuePlans(f, JOBS);
    const random = seededRandom(SEED);
    let started = 0;
    // Jobs a killed worker held stay `running` until their lease expires: the next worker cannot take them.
    for (let kill = 0; kill < KILLS; kill++) started += await runAndKill(5 + Math.floor(random() * 60));
    const orphaned = (await f.pool.query("select count(*)::int as n from akadze.all_jobs where state = 'running'")).rows[0].n;
    const cleanups = await finishEverything(f, Date.now() + 3600_000);
    const ledger = await ledgerOf(f);
    console.log(`fault suite (SIGKILL, seed ${SEED}): ${ledger.jobs} jobs, ${KILLS} kills, ${started} bodies started by killed workers, ` +
      `${orphaned} jobs left running, ${ledger.runs} runs, ${ledger.lostOutcomes} outcomes lost to kills (re-runs: ${ledger.rerunSuccesses} after a success), ` +
      `${ledger.lostClaims} claims lost before start, ${ledger.snoozeThenExpiry} snoozes followed by an expiry, ${cleanups} clean invocations, ` +
      `states ${JSON.stringify(ledger.states)}, losses ${ledger.losses}`);
    expectNothingLost(ledger);
    expect(orphaned).toBeGreaterThan(0); // the kills did land mid-batch
    expect(ledger.lostOutcomes + ledger.lostClaims).toBeGreaterThan(0);
  }, 120_000);
});
