// Faults do not lose work: an HTTP Postgres that fails, delays and drops requests under concurrent
// invocations, and worker processes killed with SIGKILL mid-batch. Every run of a body is counted in
// a side table over node-postgres, then reconciled with the jobs table (test/fixtures/fault-ledger.ts).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { runOnce, type Db } from "../src/index.js";
import { createTestDatabase } from "./support/postgres.js";
import { CREATE_RUNS_TABLE, faultApp, PLANS, seededRandom, type RunRow } from "./fixtures/fault-tasks.js";
import { reconcile, type JobRow, type Ledger } from "./fixtures/fault-ledger.js";

const SEED = Number(process.env.FAULT_SEED ?? 20260601);
const WORKER = fileURLToPath(new URL("./fixtures/fault-worker.ts", import.meta.url));
const DAY = 24 * 3600_000;

interface Fixture { url: string; pool: pg.Pool; db: Db; drop: () => Promise<void> }

async function openFixture(prefix: string): Promise<Fixture> {
  const database = await createTestDatabase(prefix);
  const pool = new pg.Pool({ connectionString: database.url, max: 8 });
  await pool.query(CREATE_RUNS_TABLE);
  return { url: database.url, pool, db: drizzle(pool) as unknown as Db, drop: async () => { await pool.end(); await database.drop(); } };
}

/** `count` jobs, the plans in turn, enqueued over node-postgres (the faults are in what follows). */
async function enqueuePlans(f: Fixture, count: number): Promise<void> {
  const { task } = faultApp(f.pool, { runner: "enqueue" });
  await task.using(f.db).enqueueMany(Array.from({ length: count }, (_, i) => ({ plan: PLANS[i % PLANS.length] })));
}

/** Clean invocations with a clock far ahead (leases expired, every delay due) until no job is left to run. */
async function finishEverything(f: Fixture, from: number): Promise<number> {
  const { app } = faultApp(f.pool, { runner: "cleanup" });
  let at = from;
  let invocations = 0;
  for (; invocations < 100; invocations++) {
    const open = (await f.pool.query("select count(*)::int as n from akadze.jobs where state in ('queued', 'running')")).rows[0].n;
    if (open === 0) break;
    await runOnce(app, { db: f.db, now: () => new Date(at), batchSize: 200, slots: 16 });
    at += DAY;
  }
  return invocations;
}

async function ledgerOf(f: Fixture): Promise<Ledger> {
  const jobs = (await f.pool.query<JobRow>("select id::int, state, attempt, max_attempts, errors, result, args from akadze.jobs order by id")).rows;
  const runs = (await f.pool.query<RunRow>("select seq::int, job_id::int, attempt, intent, runner from fault_runs")).rows;
  return reconcile(jobs, runs);
}

function expectNothingLost(ledger: Ledger): void {
  expect(ledger.violations.slice(0, 10)).toEqual([]);
  expect(ledger.losses).toBe(0);
  expect(ledger.states.queued ?? 0).toBe(0);
  expect(ledger.states.running ?? 0).toBe(0);
}

describe("a worker process killed with SIGKILL mid-batch", () => {
  const JOBS = 600;
  const KILLS = 8;
  let f: Fixture;
  beforeAll(async () => { f = await openFixture("faultkill"); });
  afterAll(async () => { await f?.drop(); });

  /** Starts the fixture worker and kills it once `after` bodies have started (or it runs out of work). */
  function runAndKill(after: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ["--import", "tsx", WORKER], {
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
    let orphaned = 0;
    let started = 0;
    for (let kill = 0; kill < KILLS; kill++) {
      started += await runAndKill(5 + Math.floor(random() * 60));
      orphaned += (await f.pool.query("select count(*)::int as n from akadze.jobs where state = 'running'")).rows[0].n;
      // Jobs the next worker cannot see until their lease expires stay behind; that is the point.
    }
    const cleanups = await finishEverything(f, Date.now() + 3600_000);
    const ledger = await ledgerOf(f);
    console.log(`fault suite (SIGKILL, seed ${SEED}): ${ledger.jobs} jobs, ${KILLS} kills, ${started} bodies started by killed workers, ` +
      `${orphaned} leases orphaned, ${ledger.runs} runs, ${ledger.lostOutcomes} outcomes lost to kills (re-runs: ${ledger.rerunSuccesses} after a success), ` +
      `${ledger.lostClaims} claims lost before start, ${cleanups} clean invocations, states ${JSON.stringify(ledger.states)}, losses ${ledger.losses}`);
    expectNothingLost(ledger);
    expect(orphaned).toBeGreaterThan(0); // the kills did land mid-batch
    expect(ledger.lostOutcomes + ledger.lostClaims).toBeGreaterThan(0);
  });
});
