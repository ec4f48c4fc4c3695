// The workers registry: invocations record themselves inside their own statements, workers at start,
// while alive and at stop; `listWorkers` tells live from stopped and lost.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createApp, current, runOnce } from "../../src/index.js";
import { listWorkers } from "../../src/ops/workers.js";
import { runWorker } from "../../src/runtime/run-worker.js";
import { ManualClock } from "../support/clock.js";
import { deferred } from "../support/deferred.js";
import { waitFor } from "../support/wait-for.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { forEachDriver } from "../support/drivers.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("ops_registry"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

const MINUTE = 60_000;

describe("workers registry", () => {
  it("an invocation records itself in its claim and counts its jobs in its completion, with no extra round trip", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ok = app.task("ok", { queue: "mail" }, async () => "sent");
    await ok.using(t.db).enqueue({});
    const unregistered = await runOnce(app, { db: t.db, now: clock.now, queues: ["mail"], register: false });
    await ok.using(t.db).enqueue({});
    const registered = await runOnce(app, { db: t.db, now: clock.now, queues: ["mail"], id: "inv-1" });
    expect([unregistered.roundTrips, registered.roundTrips]).toEqual([2, 2]); // claim and completion either way
    const [row] = await t.rows("select * from akadze.workers");
    expect(row).toMatchObject({ id: "inv-1", kind: "invocation", queues: ["mail"], jobs_done: 1 });
    expect(row.started_at.toISOString()).toBe(clock.now().toISOString());
    expect(row.stopped_at.toISOString()).toBe(clock.now().toISOString());
    const [listed] = await listWorkers(t.db, { now: clock.now() });
    expect(listed).toMatchObject({ id: "inv-1", kind: "invocation", status: "stopped", jobsDone: 1, running: 0 });
  });

  it("an invocation counts every job over all its completions and is stopped after the last", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const release = deferred();
    app.task("quick", async () => {});
    app.task("slow", async () => { await release.promise; });
    await app.taskByName("quick").using(t.db).enqueueMany([{}, {}, {}]);
    await app.taskByName("slow").using(t.db).enqueue({});
    const run = runOnce(app, { db: t.db, now: clock.now, id: "inv-4", slots: 4 });
    await waitFor(async () => (await t.rows("select jobs_done from akadze.workers"))[0]?.jobs_done === 3, "the three quick jobs' completion");
    expect((await t.rows("select stopped_at from akadze.workers"))[0].stopped_at).toBeNull(); // the slow job still runs
    release.resolve();
    const summary = await run;
    expect(summary.roundTrips).toBeGreaterThanOrEqual(3);
    expect(await t.rows("select jobs_done, stopped_at is not null as stopped from akadze.workers")).toEqual([{ jobs_done: 4, stopped: true }]);
  });

  it("jobs completed with completeTx count as done too, in the completion that follows them", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    app.task("tx", async () => { await current().completeTx(async () => {}); });
    app.task("plain", async () => {});
    await app.taskByName("tx").using(t.db).enqueue({});
    await app.taskByName("plain").using(t.db).enqueue({});
    // One claim (drain: false) of the whole batch: the plain job waits for the one slot.
    const summary = await runOnce(app, { db: t.db, now: clock.now, id: "inv-tx", slots: 1, drain: false });
    expect((await t.rows("select jobs_done from akadze.workers"))[0].jobs_done).toBe(2);
    expect(summary.roundTrips).toBe(3); // the claim, the start of the plain job, its completion (which counts both): no registry statement
  });

  it("an invocation holding leases is live, and stopped once its jobs are done", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const started = deferred();
    const release = deferred();
    app.task("slow", async () => { started.resolve(); await release.promise; });
    await app.taskByName("slow").using(t.db).enqueue({});
    const run = runOnce(app, { db: t.db, now: clock.now, id: "inv-slow" });
    await started.promise;
    expect(await listWorkers(t.db, { now: clock.now() })).toMatchObject([{ id: "inv-slow", status: "live", running: 1, jobsDone: 0 }]);
    release.resolve();
    await run;
    expect(await listWorkers(t.db, { now: clock.now() })).toMatchObject([{ id: "inv-slow", status: "stopped", running: 0, jobsDone: 1 }]);
  });

  it("an invocation that claims nothing leaves no row, so idle ticks do not fill the list", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ok = app.task("ok", async () => {});
    for (let tick = 0; tick < 3; tick++) {
      expect(await runOnce(app, { db: t.db, now: clock.now, id: `inv-idle-${tick}` })).toMatchObject({ claimed: 0, roundTrips: 1 });
      clock.advance(1000);
    }
    expect(await t.rows("select id from akadze.workers")).toEqual([]);
    await ok.using(t.db).enqueue({});
    await runOnce(app, { db: t.db, now: clock.now, id: "inv-busy" });
    expect((await listWorkers(t.db, { now: clock.now() })).map((w) => [w.id, w.status, w.jobsDone])).toEqual([["inv-busy", "stopped", 1]]);
  });

  it("an invocation whose first claim took nothing records itself with the claim that takes a job", async () => {
    const clock = new ManualClock("2026-06-01T12:00:00Z");
    const app = createApp({ clock: clock.now });
    app.periodic("sync", { every: "1m" }, async () => {});
    const started = clock.now();
    // The first claim enqueues the due slot (its own snapshot cannot see it), the second takes it.
    const summary = await runOnce(app, { db: t.db, now: clock.now, id: "inv-sched" });
    expect(summary).toMatchObject({ claimed: 1, succeeded: 1, roundTrips: 3 });
    const [row] = await t.rows("select id, jobs_done, started_at, stopped_at is not null as stopped from akadze.workers");
    expect(row).toMatchObject({ id: "inv-sched", jobs_done: 1, stopped: true });
    expect(row.started_at.toISOString()).toBe(started.toISOString());
  });

  it("an invocation whose leases expired is listed as lost", async () => {
    const clock = new ManualClock();
    await t.rows(`insert into akadze.workers (id, kind, started_at, last_seen_at) values ('inv-dead', 'invocation', $1, $1)`, [clock.now()]);
    await t.rows(`insert into akadze.jobs (task, state, attempt, lease_owner, lease_expires_at) values ('ok', 'running', 1, 'inv-dead', $1)`,
      [new Date(clock.now().getTime() - 1000)]);
    const rows = await listWorkers(t.db, { now: clock.now() });
    expect(rows.map((r) => [r.id, r.status])).toEqual([["inv-dead", "lost"]]);
  });

  it("register: false leaves the registry alone", async () => {
    const app = createApp();
    app.task("ok", async () => {});
    await app.taskByName("ok").using(t.db).enqueue({});
    await runOnce(app, { db: t.db, register: false });
    expect(await t.rows("select * from akadze.workers")).toEqual([]);
  });

  it("a worker is live while seen, lost when unseen for over a minute, and stopped once it stops", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    app.task("ok", async () => {});
    await app.taskByName("ok").using(t.db).enqueueMany([{}, {}]);
    const stop = new AbortController();
    const started = deferred<string>();
    let succeeded = 0;
    const bothDone = deferred();
    const worker = runWorker(app, {
      db: t.db, queues: ["default"], slots: 2, signal: stop.signal, now: clock.now, onStart: started.resolve,
      onInvocation: (s) => { succeeded += s.succeeded; if (succeeded === 2) bothDone.resolve(); },
    });
    const id = await started.promise;
    expect(await listWorkers(t.db, { now: clock.now() })).toMatchObject([{ id, kind: "worker", status: "live", queues: ["default"] }]);
    expect(await listWorkers(t.db, { now: new Date(clock.now().getTime() + 2 * MINUTE) })).toMatchObject([{ id, status: "lost" }]);
    await bothDone.promise;
    // The queue ran dry, so the worker reports its jobs done at once rather than at the next 15 s interval:
    // the deadline is well inside that interval, so a report that waited for it fails here.
    const reported = async () => (await listWorkers(t.db, { now: clock.now() }))[0];
    await waitFor(async () => (await reported()).jobsDone >= 2, "the worker to report its jobs done", { timeoutMs: 5_000, intervalMs: 10 });
    expect(await reported()).toMatchObject({ id, status: "live", jobsDone: 2 });
    stop.abort();
    const summary = await worker;
    expect(summary).toMatchObject({ id, jobsDone: 2, succeeded: 2, released: 0 });
    expect(await listWorkers(t.db, { now: clock.now() })).toMatchObject([{ id, status: "stopped", jobsDone: 2 }]);
    expect(await t.rows("select count(*)::int as n from akadze.workers")).toEqual([{ n: 1 }]); // its invocations are not rows of their own
  });

  it("workers list shows what stopped within --since and hides older ones unless asked", async () => {
    const now = new Date("2026-06-01T12:00:00Z");
    const ago = (ms: number) => new Date(now.getTime() - ms);
    for (const [id, lastSeen] of [["recent", ago(10 * MINUTE)], ["old", ago(3 * 60 * MINUTE)]] as const) {
      await t.rows(`insert into akadze.workers (id, kind, started_at, last_seen_at, stopped_at) values ($1, 'worker', $2, $2, $2)`, [id, lastSeen]);
    }
    expect((await listWorkers(t.db, { now })).map((w) => w.id)).toEqual(["recent"]);
    expect((await listWorkers(t.db, { now, since: "4h" })).map((w) => w.id)).toEqual(["recent", "old"]);
    expect((await listWorkers(t.db, { now, all: true })).map((w) => w.id)).toEqual(["recent", "old"]);
    await expect(listWorkers(t.db, { since: "soon" as never })).rejects.toThrow(/Invalid duration/);
  });
});

describe("workers registry and jobs completed on their own", () => {
  forEachDriver((h) => {
    it("jobs completed with completeBatch count as done though no completion statement follows them", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      app.task("batch", async () => { await current().completeBatch(() => []); });
      await app.taskByName("batch").using(h().db).enqueueMany([{}, {}, {}]);
      const summary = await runOnce(app, { db: h().db, now: clock.now, id: "inv-batch", slots: 3 });
      expect(summary).toMatchObject({ claimed: 3, succeeded: 3 });
      expect(summary.roundTrips).toBe(2); // the claim, then one registry update at the end for all three
      expect(await listWorkers(h().db, { now: clock.now() })).toMatchObject([{ id: "inv-batch", status: "stopped", jobsDone: 3 }]);
      expect(await h().rows("select jobs_done, stopped_at is not null as stopped from akadze.workers")).toEqual([{ jobs_done: 3, stopped: true }]);
    });
  });
});
