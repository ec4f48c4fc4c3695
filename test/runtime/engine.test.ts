// The invocation engine (SPEC §3): an invocation drains its budget instead of running one batch, a
// prefetching worker never charges a crash to jobs that never started, limits are taken when bodies start,
// and a heartbeat never judges jobs it did not cover.
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished, vi } from "vitest";
import { sql } from "drizzle-orm";
import { createApp, runOnce, setLimit } from "../../src/index.js";
import { runWorker } from "../../src/runtime/run-worker.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { busiestWindow } from "../support/busiest-window.js";
import { CLI_START_TIMEOUT_MS, CLI_TEST_TIMEOUT_MS, startAkadze } from "../support/cli.js";
import { waitFor } from "../support/wait-for.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { app as fixtureApp, FIXTURE_TABLES, once } from "../fixtures/worker-app.js";

/** A body that yields to I/O once, as a real job would, and moves the test clock by `ms`. */
const ioJob = (clock: ManualClock, ms: number) => async () => {
  await new Promise((resolve) => setTimeout(resolve, 1));
  clock.advance(ms);
};

forEachDriver((h) => {
  it("one invocation works its whole budget over a backlog, returns within it, and leaves nothing running", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    // On the test clock, each run takes 250 ms of a 50 s budget. (The timeout is also kept on the real clock, so
    // it is long enough that a loaded machine, with PGlite holding the event loop, cannot reach it.)
    const task = app.task("io", { timeout: "5s" }, ioJob(clock, 250));
    await task.using(h().db).enqueueMany(Array.from({ length: 1000 }, () => ({})));
    const summary = await runOnce(app, { db: h().db, slots: 4, batchSize: 20, budget: "50s" });

    expect(summary.claimed).toBeGreaterThan(20 * 5); // many batches, not one
    expect(summary.durationMs).toBeLessThanOrEqual(50_000); // no job outlives the budget
    expect(summary.durationMs).toBeGreaterThanOrEqual(43_000); // and it worked until the last job that fit (5 s timeout, claim margin)
    const states = await h().rows<{ state: string; n: number; attempts: number }>(
      "select state, count(*)::int as n, max(attempt)::int as attempts from akadze.all_jobs group by state order by state");
    expect(states.map((s) => s.state)).toEqual(["queued", "succeeded"]);
    expect(states[0].attempts).toBe(0); // released jobs have their attempt back
    expect(states[1].n).toBe(summary.succeeded);
    expect(summary.claimed).toBe(summary.succeeded + summary.released);
  });

  it("a large claim over a jobs table whose planner statistics were never gathered gathers them, and claims go on", async () => {
    const app = createApp();
    const noop = app.task("noop", async () => {});
    // Autovacuum, woken by the inserts, would hold the table's maintenance lock and the claim's ANALYZE skip it.
    await h().db.execute(sql`alter table akadze.jobs set (autovacuum_enabled = off)`);
    // A TRUNCATE forgets the table's statistics (the suite empties tables by deleting, which keeps them); one at
    // the end leaves the next test a table without this one's 20,000 dead rows.
    onTestFinished(async () => { await h().db.execute(sql`truncate akadze.jobs`); await h().db.execute(sql`alter table akadze.jobs reset (autovacuum_enabled)`); });
    await h().db.execute(sql`truncate akadze.jobs`);
    for (let i = 0; i < 4; i++) await noop.using(h().db).enqueueMany(Array.from({ length: 5000 }, () => ({ pad: "x".repeat(300) })));
    const [before] = await h().rows<{ tuples: number }>("select reltuples::float8 as tuples from pg_class where oid = 'akadze.jobs'::regclass");
    expect(before.tuples).toBeLessThan(0); // never analyzed: the planner would sort every queued job per claim
    const summary = await runOnce(app, { db: h().db, batchSize: 100, slots: 10, drain: false });
    expect(summary.succeeded).toBe(100);
    const [after] = await h().rows<{ tuples: number }>("select reltuples::float8 as tuples from pg_class where oid = 'akadze.jobs'::regclass");
    expect(after.tuples).toBeGreaterThan(10_000); // gathered before runOnce returned
  });

  it("draining an endless backlog with a finite budget returns", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const chain = app.task("chain", async () => {
      await chain.using(h().db).enqueueMany([{}, {}]); // every job adds two more: the backlog never ends
      clock.advance(20);
    });
    await chain.using(h().db).enqueueMany(Array.from({ length: 8 }, () => ({})));
    const summary = await runOnce(app, { db: h().db, slots: 4, batchSize: 8, budget: "2s" });
    expect(summary.succeeded).toBeGreaterThan(8);
    expect(summary.durationMs).toBeLessThanOrEqual(2000);
    expect(await h().rows("select count(*)::int as n from akadze.all_jobs where state = 'running'")).toEqual([{ n: 0 }]);
  });
});

forEachDriver((h) => {
  it("a heartbeat racing the refill claims never aborts a healthy job", async () => {
    const app = createApp();
    let aborted = 0;
    const task = app.task("quick", async (_args, job) => {
      await new Promise((resolve) => setTimeout(resolve, 2));
      if (job.signal.aborted) aborted++;
    });
    await task.using(h().db).enqueueMany(Array.from({ length: 300 }, () => ({})));
    const summary = await runOnce(app, { db: h().db, slots: 4, batchSize: 8, heartbeat: 10, budget: "60s" });
    expect(aborted).toBe(0);
    expect(summary).toMatchObject({ succeeded: 300, lost: 0 });
    expect(await h().rows("select state, attempt, count(*)::int as n from akadze.all_jobs group by 1, 2")).toEqual([{ state: "succeeded", attempt: 1, n: 300 }]);
  });

  it("a prefetching worker takes a maxStarts token when a body starts: no window of start times holds more", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const starts: number[] = [];
    const task = app.task("vendor.call", async () => { starts.push(clock.now().getTime()); });
    await setLimit(h().db, "vendor", { maxStarts: 5, window: "10s" });
    await task.using(h().db, { limitKey: "vendor" }).enqueueMany(Array.from({ length: 30 }, () => ({})));
    const stop = new AbortController();
    const worker = runWorker(app, { db: h().db, slots: 4, prefetch: 20, now: clock.now, minPoll: 1, maxPoll: 5, signal: stop.signal });
    // Move the clock in steps shorter than the window, giving the worker a moment to react to each (it polls every 5 ms).
    await waitFor(() => {
      if (starts.length >= 30) return true;
      clock.advance(500);
      return false;
      // (Every 50 ms of real time: a token's start deadline is its slack, 1 s on this clock, so 100 ms of real time
      // here, which a loaded machine still meets; at 10 ms a started job missed it and was released again and again.)
    }, "the worker to start all 30 jobs", { intervalMs: 50, timeoutMs: 100_000 }); // a deadline: alone it takes a few seconds
    stop.abort();
    await worker;
    expect(starts).toHaveLength(30);
    expect(busiestWindow(starts, 10_000)).toBeLessThanOrEqual(5);
  }, 120_000);
}, ["node-postgres", "neon-http"]);

describe("a worker killed with SIGKILL", () => {
  let t: TestDatabase;
  beforeAll(async () => { t = await openTestDatabase("engine_kill"); });
  afterAll(async () => { await t?.close(); });
  beforeEach(async () => { await t.reset(); });

  it("charges only the jobs whose bodies may have started: prefetched ones come back queued, and a maxAttempts: 1 job never runs twice", async () => {
    await t.pool.query(FIXTURE_TABLES);
    await t.pool.query("truncate fixture_events, fixture_gates");
    const ids = await once.using(t.db).enqueueMany(Array.from({ length: 6 }, () => ({ gate: "open" })));
    const { child, stderr, exited } = startAkadze(["worker", "test/fixtures/worker-app.ts", "--queue", "once", "--slots", "2"], { env: { DATABASE_URL: t.url } });
    try {
      // Two bodies run (waiting for their gate); more jobs are prefetched by the same worker.
      await waitFor(async () => {
        if (child.exitCode !== null) throw new Error(`worker exited early: ${stderr()}`);
        const [{ started, held }] = await t.rows(`select (select count(*)::int from fixture_events where event = 'started') as started,
          (select count(*)::int from akadze.all_jobs where state = 'running') as held`);
        return started === 2 && held >= 4;
      }, "two bodies to start and more jobs to be held (prefetched)", { timeoutMs: CLI_START_TIMEOUT_MS }); // the process loads tsx first
    } finally {
      child.kill("SIGKILL");
      await exited;
    }

    const [{ prefetched }] = await t.rows("select count(*)::int as prefetched from akadze.all_jobs where state = 'running' and started_at is null");
    expect(prefetched).toBeGreaterThanOrEqual(2);
    // Another invocation, after the leases expired, recovers them all and runs what may run.
    await t.pool.query("insert into fixture_gates values ('open')");
    vi.stubEnv("DATABASE_URL", t.url); // the fixture's bodies record their events through it
    const later = () => new Date(Date.now() + 5 * 60_000);
    const summary = await runOnce(fixtureApp, { db: t.db, queues: ["once"], now: later });
    expect(summary.recovered).toBeGreaterThanOrEqual(4);

    const jobs = await t.rows<{ id: string; state: string; attempt: number; errors: { kind: string }[] }>(
      "select id, state, attempt, errors from akadze.all_jobs order by id");
    const runs = await t.rows<{ job_id: string; n: number }>("select job_id, count(*)::int as n from fixture_events where event = 'started' group by job_id");
    const started = new Set(runs.filter((r) => r.n > 0).map((r) => String(r.job_id)));
    expect(runs.every((r) => r.n === 1)).toBe(true); // no job ran twice
    for (const job of jobs) {
      // The two whose bodies may have run spent their only attempt; the prefetched four never lost one and ran now.
      if (jobs.indexOf(job) < 2) expect(job).toMatchObject({ state: "failed", attempt: 1, errors: [{ kind: "LeaseExpired" }] });
      else expect(job).toMatchObject({ state: "succeeded", attempt: 1 });
    }
    expect(started.size).toBe(6);
    expect(jobs.map((j) => Number(j.id))).toEqual(ids);
  }, CLI_TEST_TIMEOUT_MS);
});
