// The long-lived worker: slots per queue, refilled as jobs end, and a graceful stop (in process and
// as the real `akadze worker` process receiving SIGTERM).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import * as v from "valibot";
import { createApp, runOnce } from "../../src/index.js";
import { nextPollDelay, runWorker } from "../../src/runtime/run-worker.js";
import { FIXTURE_TABLES, gated } from "../fixtures/worker-app.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { startNeonEndpoint } from "../../src/dev/neon-endpoint.js";
import { neonHttpDb } from "../support/neon.js";
import type { Db } from "../../src/db/query.js";
import { deferred, type Deferred } from "../support/deferred.js";
import { CLI_START_TIMEOUT_MS, CLI_TEST_TIMEOUT_MS, startAkadze } from "../support/cli.js";
import { waitFor } from "../support/wait-for.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("ops_worker"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

/** An app whose jobs start, tell the test, and wait until the test lets them finish. */
function gatedApp() {
  const app = createApp();
  const gates = new Map<string, { started: Deferred; finish: Deferred }>();
  const gate = (name: string) => {
    if (!gates.has(name)) gates.set(name, { started: deferred(), finish: deferred() });
    return gates.get(name)!;
  };
  const task = app.task("hold", { args: v.object({ name: v.string() }) }, async ({ name }) => {
    gate(name).started.resolve();
    await gate(name).finish.promise;
    return name;
  });
  return { app, task, gate };
}

const states = async () => t.rows<{ args: { name: string }; queue: string; state: string; attempt: number }>(
  "select args, queue, state, attempt from akadze.all_jobs order by id");

describe("runOnce on stop", () => {
  it("releases the claimed jobs that never started to queued with their attempts unspent", async () => {
    const { app, task, gate } = gatedApp();
    await task.using(t.db).enqueueMany(["a", "b", "c", "d"].map((name) => ({ name })));
    const stop = new AbortController();
    // One claim (drain: false) of the whole batch: three jobs wait for the one slot.
    const run = runOnce(app, { db: t.db, batchSize: 4, slots: 1, signal: stop.signal, drain: false });
    await gate("a").started.promise;
    stop.abort();
    gate("a").finish.resolve();
    const summary = await run;
    expect(summary).toMatchObject({ claimed: 4, succeeded: 1, released: 3 });
    expect((await states()).map((j) => [j.args.name, j.state, j.attempt])).toEqual([
      ["a", "succeeded", 1], ["b", "queued", 0], ["c", "queued", 0], ["d", "queued", 0]]);
  });
});

describe("runOnce before it knows its jobs' pace", () => {
  it("claims the jobs its free slots start and one more, and claims again only once a slot is free: no job waits claimed and unstarted", async () => {
    const { app, task, gate } = gatedApp();
    const names = ["a", "b", "c", "d", "e", "f", "g", "h"];
    await task.using(t.db).enqueueMany(names.map((name) => ({ name })));
    const run = runOnce(app, { db: t.db, batchSize: 8, slots: 2 });
    await gate("a").started.promise;
    await gate("b").started.promise;
    // The first claim took a, b (started) and c (held): with both slots busy no further claim goes out.
    const running = () => t.rows<{ name: string; started: boolean }>(
      "select args->>'name' as name, started_at is not null as started from akadze.jobs where state = 'running' order by id");
    expect(await running()).toEqual([{ name: "a", started: true }, { name: "b", started: true }, { name: "c", started: false }]);
    for (const name of names) gate(name).finish.resolve();
    const summary = await run;
    expect(summary).toMatchObject({ claimed: 8, succeeded: 8 });
    expect((await states()).map((j) => j.state)).toEqual(Array(8).fill("succeeded"));
  });
});

describe("runWorker", () => {
  it("refills a slot as soon as its job ends, while the other slot's job still runs", async () => {
    const { app, task, gate } = gatedApp();
    await task.using(t.db).enqueueMany(["a", "b", "c"].map((name) => ({ name })));
    const stop = new AbortController();
    const worker = runWorker(app, { db: t.db, slots: 2, signal: stop.signal });
    await Promise.all([gate("a").started.promise, gate("b").started.promise]);
    gate("b").finish.resolve();
    await gate("c").started.promise;
    // b's outcome is recorded in the next completion statement, which may still be on its way.
    await waitFor(async () => (await states())[1].state === "succeeded", "b's completion");
    expect((await states()).map((j) => [j.args.name, j.state])).toEqual([["a", "running"], ["b", "succeeded"], ["c", "running"]]);
    gate("a").finish.resolve();
    gate("c").finish.resolve();
    stop.abort();
    expect(await worker).toMatchObject({ jobsDone: 3, succeeded: 3, released: 0 });
  });

  it("gives every queue its own slots: three queues with two slots run six jobs at once", async () => {
    const { app, task, gate } = gatedApp();
    const names: string[] = [];
    for (const queue of ["a", "b", "c"]) {
      const batch = [1, 2, 3].map((n) => `${queue}${n}`);
      names.push(...batch);
      await task.using(t.db, { queue }).enqueueMany(batch.map((name) => ({ name })));
    }
    const stop = new AbortController();
    const worker = runWorker(app, { db: t.db, queues: ["a", "b", "c"], slots: 2, signal: stop.signal });
    await Promise.all(["a1", "a2", "b1", "b2", "c1", "c2"].map((name) => gate(name).started.promise));
    // Two bodies run per queue; the third job is prefetched (leased, not started).
    const running = await t.rows("select queue, count(*) filter (where state = 'running' and started_at is not null)::int as running, count(*) filter (where started_at is null)::int as waiting from akadze.all_jobs group by queue order by queue");
    expect(running).toEqual([{ queue: "a", running: 2, waiting: 1 }, { queue: "b", running: 2, waiting: 1 }, { queue: "c", running: 2, waiting: 1 }]);
    for (const name of names) gate(name).finish.resolve();
    await Promise.all(["a3", "b3", "c3"].map((name) => gate(name).started.promise));
    stop.abort();
    expect(await worker).toMatchObject({ jobsDone: 9, succeeded: 9 });
  });

  it("on stop takes no new job, lets running ones finish, and only then resolves", async () => {
    const { app, task, gate } = gatedApp();
    await task.using(t.db).enqueueMany(["a", "b", "c"].map((name) => ({ name })));
    const stop = new AbortController();
    let resolved = false;
    const worker = runWorker(app, { db: t.db, slots: 2, signal: stop.signal }).finally(() => { resolved = true; });
    await Promise.all([gate("a").started.promise, gate("b").started.promise]);
    stop.abort();
    gate("a").finish.resolve();
    // a's outcome is recorded and c (prefetched, never started) released: all a worker that did not wait for
    // b would do before it resolves.
    await waitFor(async () => { const [a, , c] = await states(); return a.state === "succeeded" && c.state === "queued"; }, "a's outcome and c's release");
    expect(resolved).toBe(false); // b still runs
    gate("b").finish.resolve();
    const summary = await worker;
    expect(summary).toMatchObject({ succeeded: 2, released: 1 }); // c was prefetched, never started
    expect((await states()).map((j) => [j.args.name, j.state, j.attempt])).toEqual([["a", "succeeded", 1], ["b", "succeeded", 1], ["c", "queued", 0]]);
    expect(await t.rows("select kind, jobs_done, stopped_at is not null as stopped from akadze.workers")).toEqual([{ kind: "worker", jobs_done: 2, stopped: true }]);
  });

  it("rides out a database outage: reports the errors, keeps polling, and runs jobs once the database answers", async () => {
    const fault = { failRate: 0 };
    const endpoint = await startNeonEndpoint({ connectionString: t.url, fault });
    try {
      const db = neonHttpDb(endpoint, new URL(t.url).pathname.slice(1)) as unknown as Db;
      const { app, task, gate } = gatedApp();
      const stop = new AbortController();
      const up = deferred();
      const failing = deferred();
      let errors = 0;
      const worker = runWorker(app, {
        db, slots: 2, signal: stop.signal, minPoll: 1, maxPoll: 20, onStart: () => up.resolve(),
        onError: () => { if (++errors === 5) failing.resolve(); },
      });
      await up.promise;
      fault.failRate = 1; // every request now gets a 503
      await task.using(t.db).enqueue({ name: "after" });
      await failing.promise;
      expect(await states()).toMatchObject([{ state: "queued", attempt: 0 }]);
      fault.failRate = 0;
      await gate("after").started.promise;
      gate("after").finish.resolve();
      stop.abort();
      expect(await worker).toMatchObject({ jobsDone: 1, succeeded: 1 });
    } finally {
      await endpoint.close();
    }
  });

  it("rejects bad options before touching the database", async () => {
    const { app } = gatedApp();
    await expect(runWorker(app, { db: t.db, slots: 0 })).rejects.toThrow(/slots must be at least 1/);
    await expect(runWorker(app, { db: t.db, queues: [] })).rejects.toThrow(/at least one queue/);
    expect(await t.rows("select * from akadze.workers")).toEqual([]);
  });

  it("an idle queue's poller backs off from the shortest wait to the longest, and only the poller does", () => {
    const poll = { min: 50, max: 2000 };
    const waits: number[] = [];
    let delay = 0;
    for (let i = 0; i < 8; i++) waits.push(delay = nextPollDelay(delay, true, poll));
    expect(waits).toEqual([50, 100, 200, 400, 800, 1600, 2000, 2000]);
    expect(nextPollDelay(0, false, poll)).toBe(50); // a lane that found its queue empty after work
    expect(nextPollDelay(400, false, poll)).toBe(400);
  });
});

describe("akadze worker (the process)", () => {
  it("on SIGTERM lets running jobs finish and leaves unstarted ones queued with attempts unspent", async () => {
    await t.pool.query(FIXTURE_TABLES);
    await t.pool.query("truncate fixture_events, fixture_gates");
    const ids = await gated.using(t.db).enqueueMany(["g", "g", "g", "g", "g"].map((gate) => ({ gate })));
    const { child, stdout, stderr, exited } = startAkadze(["worker", "test/fixtures/worker-app.ts", "--queue", "gated", "--slots", "2"], { env: { DATABASE_URL: t.url } });
    try {
      // Both slots take a job, which waits for the gate.
      await waitFor(async () => {
        if (child.exitCode !== null) throw new Error(`worker exited early: ${stderr()}`);
        return (await t.rows("select count(*)::int as n from fixture_events where event = 'started'"))[0].n >= 2;
      }, "both slots to start a job", { timeoutMs: CLI_START_TIMEOUT_MS }); // the process loads tsx first
      child.kill("SIGTERM");
      await waitFor(() => stderr().includes("SIGTERM: taking no new jobs"), "the worker to acknowledge SIGTERM");
      await t.pool.query("insert into fixture_gates values ('g')");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
    expect(stdout()).toMatch(/worker wrk-\S+ started on .*: gated \(2 slots\), 5 tasks/);
    expect(stdout()).toMatch(/stopped: 2 runs \(2 succeeded, 0 retried, 0 failed\), 3 released/); // prefetched, never started
    const jobs = await t.rows<{ id: string; state: string; attempt: number }>("select id, state, attempt from akadze.all_jobs order by id");
    const started = (await t.rows("select job_id from fixture_events where event = 'started' order by job_id")).map((r) => r.job_id);
    const finished = (await t.rows("select job_id from fixture_events where event = 'finished' order by job_id")).map((r) => r.job_id);
    expect(started).toHaveLength(2);
    expect(finished).toEqual(started);
    for (const job of jobs) {
      if (started.includes(job.id)) expect(job).toMatchObject({ state: "succeeded", attempt: 1 });
      else expect(job).toMatchObject({ state: "queued", attempt: 0 });
    }
    expect(jobs.map((j) => Number(j.id))).toEqual(ids);
    expect(await t.rows("select kind, jobs_done, stopped_at is not null as stopped from akadze.workers")).toEqual([{ kind: "worker", jobs_done: 2, stopped: true }]);
  }, CLI_TEST_TIMEOUT_MS);
});
