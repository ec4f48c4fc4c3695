// Issue 16's scale-out: K concurrent runOnce loops over short I/O jobs, with the Postgres CPU they cost per
// claim, and what one claim costs Postgres when idle and when it takes 16 jobs.
import { sql } from "drizzle-orm";
import pg from "pg";
import { createApp, runOnce, type App, type Db, type Task } from "../src/index.js";
import { query } from "../src/db/query.js";
import { openAkadze, type AkadzeDriver, type AkadzeTarget } from "./akadze-db.js";
import { PG_HOST, PG_PORT, rolledBack } from "./databases.js";
import { cpuSpentMs, snapshotCpu } from "./pg-cpu.js";
import { median, medianRow, rate, sleep, timed } from "./stats.js";

/** Each invocation's shape in the scale-out, as the issue measures it. */
export const SCALE_SLOTS = 8;
export const SCALE_BATCH = 16;

export interface ScaleOutRow {
  driver: AkadzeDriver;
  k: number;
  jobs: number;
  ms: number;
  jobsPerSec: number;
  /** Time spent in job bodies over K × slots × wall time. */
  slotsBusy: number;
  invocations: number;
  /** Statements the invocations sent (their own count, summary.roundTrips). */
  statements: number;
  /** Claims seen on the wire (node-postgres and neon-http; see pg-cpu.ts). */
  claims: number | null;
  /** CPU of the database's backends over the run (null when /proc cannot see them). */
  pgCpuMs: number | null;
  pgCpuPerClaimMs: number | null;
  pgCpuPerJobMs: number | null;
}

function ioApp(jobMs: number): { app: App; io: Task } {
  const app = createApp();
  const io = app.task("bench.io", { timeout: Math.max(1000, jobMs * 10) }, async () => { await sleep(jobMs); });
  return { app, io };
}

async function enqueueIo(io: Task, db: Db, count: number, options: { queue?: string; runAt?: Date } = {}): Promise<void> {
  const args = Array.from({ length: count }, () => ({}));
  for (let i = 0; i < count; i += 1000) await io.using(db, options).enqueueMany(args.slice(i, i + 1000));
}

/** Opens `n` connections at once so every backend exists before the CPU snapshot (and stays: idle timeout off). */
async function openConnections(db: Db, n: number): Promise<void> {
  await Promise.all(Array.from({ length: n }, () => query(db, sql`select pg_sleep(0.02)`)));
}

/** K loops of runOnce (slots 8, batch 16, default budget) until their claims come back empty. */
export async function scaleOut(driver: AkadzeDriver, k: number, settings: { jobsPerSlot: number; jobMs: number }): Promise<ScaleOutRow> {
  // Every invocation of a real fan-out has a connection of its own; a heartbeat may need one more.
  const target = await openAkadze(driver, `so${k}`, { poolSize: k + 2 });
  try {
    const { app, io } = ioApp(settings.jobMs);
    const jobs = k * SCALE_SLOTS * settings.jobsPerSlot;
    await enqueueIo(io, target.db, jobs);
    await openConnections(target.db, driver === "node-postgres" ? k + 2 : 10);
    target.counter?.reset();
    const before = await snapshotCpu(target.database!);
    let succeeded = 0, invocations = 0, statements = 0;
    const { ms } = await timed(() => Promise.all(Array.from({ length: k }, async () => {
      for (;;) {
        const s = await runOnce(app, { db: target.db, slots: SCALE_SLOTS, batchSize: SCALE_BATCH });
        succeeded += s.succeeded; invocations++; statements += s.roundTrips;
        if (s.claimed === 0) return;
      }
    })));
    const pgCpuMs = cpuSpentMs(before, await snapshotCpu(target.database!));
    if (succeeded !== jobs) throw new Error(`scale-out K=${k} over ${driver} ran ${succeeded} of ${jobs} jobs`);
    const claims = target.counter?.claims ?? null;
    return {
      driver, k, jobs, ms, jobsPerSec: rate(jobs, ms), slotsBusy: (jobs * settings.jobMs) / (k * SCALE_SLOTS * ms),
      invocations, statements, claims, pgCpuMs,
      pgCpuPerClaimMs: pgCpuMs === null || !claims ? null : pgCpuMs / claims,
      pgCpuPerJobMs: pgCpuMs === null ? null : pgCpuMs / jobs,
    };
  } finally {
    await target.close();
  }
}

/** One run's rows over its rounds (`scaleOutRounds`): every field above is the median of the rounds', each round's share of slots busy beside. */
export interface ScaleOutMedians extends ScaleOutRow {
  slotsBusyEach: number[];
}

/**
 * Each of `runs` (a driver and K) `rounds` times, interleaved (every run once a round, in order), each in a fresh
 * database: one run of K = 16 ranged from 46 % to 60 % of slots busy over 13 runs on this machine (2026-12-05),
 * so a single run says little.
 */
export async function scaleOutRounds(runs: [AkadzeDriver, number][], settings: { jobsPerSlot: number; jobMs: number }, rounds: number,
  log: (line: string) => void): Promise<ScaleOutMedians[]> {
  const each: ScaleOutRow[][] = runs.map(() => []);
  for (let round = 1; round <= rounds; round++) {
    for (const [i, [driver, k]] of runs.entries()) {
      log(`scale-out round ${round} of ${rounds}: ${driver}, K=${k}`);
      each[i].push(await scaleOut(driver, k, settings));
    }
  }
  return each.map((rows) => ({ ...medianRow(rows), slotsBusyEach: rows.map((x) => x.slotsBusy) }));
}

export interface ClaimCost {
  shape: string;
  /** runOnce calls measured (0: the row is the EXPLAIN alone). */
  calls: number;
  /** Per runOnce call: wall ms (median), statements and claims sent, Postgres backend CPU. */
  wallMs: number | null;
  statementsPerCall: number | null;
  claimsPerCall: number | null;
  pgCpuPerCallMs: number | null;
  pgCpuPerClaimMs: number | null;
  /** EXPLAIN (ANALYZE) of the first claim a call sent, rerun in a rolled-back transaction: medians. */
  planningMs: number | null;
  executionMs: number | null;
  /** Jobs `running` right after the explained claim (inside its transaction): shows it claimed what the shape says. */
  explainedRows: number | null;
}

type Explained = Pick<ClaimCost, "planningMs" | "executionMs" | "explainedRows">;

/** Planning and execution time of a captured claim, `times` runs, each rolled back. */
async function explainClaim(url: string, claim: { text: string; values: unknown[] } | null, times: number): Promise<Explained> {
  if (claim === null) return { planningMs: null, executionMs: null, explainedRows: null };
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const planning: number[] = [];
    const execution: number[] = [];
    let rows = 0;
    for (let i = 0; i < times; i++) {
      await rolledBack(client, async () => {
        const result = await client.query(`explain (analyze, format json) ${claim.text}`, claim.values);
        const plan = (result.rows[0]["QUERY PLAN"] as { "Planning Time": number; "Execution Time": number }[])[0];
        rows = Number((await client.query("select count(*) from akadze.jobs where state = 'running'")).rows[0].count);
        planning.push(plan["Planning Time"]);
        execution.push(plan["Execution Time"]);
      });
    }
    return { planningMs: median(planning), executionMs: median(execution), explainedRows: rows };
  } finally {
    await client.end();
  }
}

/** `calls` runOnce calls on one connection, call i claiming from `queueOf(i)` (or every queue). */
async function measureCalls(target: AkadzeTarget, app: App, calls: number, queueOf: (i: number) => string | undefined) {
  const counter = target.counter!;
  counter.reset();
  const before = await snapshotCpu(target.database!);
  const walls: number[] = [];
  for (let i = 0; i < calls; i++) {
    const queue = queueOf(i);
    const { ms } = await timed(() => runOnce(app, { db: target.db, slots: SCALE_SLOTS, batchSize: SCALE_BATCH, ...(queue ? { queues: [queue] } : {}) }));
    walls.push(ms);
  }
  const pgCpuMs = cpuSpentMs(before, await snapshotCpu(target.database!));
  return { walls, pgCpuMs, statements: counter.statements, claims: counter.claims };
}

/**
 * What a claim costs Postgres: `calls` idle runOnce calls (nothing queued), then `calls` calls that each find
 * 16 jobs waiting in a queue of their own (enqueued beforehand, so the enqueue is not counted). One connection.
 * Then the 16-job claim alone (EXPLAIN) with `backlog` jobs queued behind it.
 */
export async function claimCosts(settings: { calls: number; explains: number; backlog: number }): Promise<ClaimCost[]> {
  const target = await openAkadze("node-postgres", "claim", { poolSize: 1 });
  try {
    const { app, io } = ioApp(0);
    for (let i = 0; i < 5; i++) await runOnce(app, { db: target.db }); // warm the connection and the code
    const out: ClaimCost[] = [];
    const url = `postgres://postgres@${PG_HOST}:${PG_PORT}/${target.database}`;
    const summarize = (shape: string, m: Awaited<ReturnType<typeof measureCalls>>, plan: Explained): ClaimCost => ({
      shape, calls: settings.calls, wallMs: median(m.walls), statementsPerCall: m.statements / settings.calls, claimsPerCall: m.claims / settings.calls,
      pgCpuPerCallMs: m.pgCpuMs === null ? null : m.pgCpuMs / settings.calls,
      pgCpuPerClaimMs: m.pgCpuMs === null || m.claims === 0 ? null : m.pgCpuMs / m.claims, ...plan,
    });

    const idle = await measureCalls(target, app, settings.calls, () => undefined);
    const idleClaim = target.counter!.firstClaim;
    out.push(summarize("idle (nothing queued)", idle, await explainClaim(url, idleClaim, settings.explains)));

    for (let i = 0; i < settings.calls; i++) await enqueueIo(io, target.db, SCALE_BATCH, { queue: `q${i}` });
    const busy = await measureCalls(target, app, settings.calls, (i) => `q${i}`);
    const busyClaim = target.counter!.firstClaim;
    // The captured claim's clock is in the past now: jobs due a minute earlier are due for it.
    await enqueueIo(io, target.db, SCALE_BATCH, { queue: "q0", runAt: new Date(Date.now() - 60_000) });
    out.push(summarize(`${SCALE_BATCH} jobs queued (one queue)`, busy, await explainClaim(url, busyClaim, settings.explains)));
    // The same 16-job claim facing a large backlog: a claim's cost should not grow with what waits behind it.
    await enqueueIo(io, target.db, settings.backlog - SCALE_BATCH, { queue: "q0", runAt: new Date(Date.now() - 60_000) });
    out.push({
      shape: `${SCALE_BATCH} of ${settings.backlog.toLocaleString("en-US")} queued (EXPLAIN only)`, calls: 0, wallMs: null, statementsPerCall: null,
      claimsPerCall: null, pgCpuPerCallMs: null, pgCpuPerClaimMs: null, ...(await explainClaim(url, busyClaim, settings.explains)),
    });
    return out;
  } finally {
    await target.close();
  }
}
