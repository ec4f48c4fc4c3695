// Retention: invocations drop the history's partitions past the horizon (one statement beside a claim that
// found it due) and prune failed jobs, registry rows and rows no partition holds a bounded batch at a time.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Cancel, createApp, Fail, runOnce } from "../../../src/index.js";
import { pruneJobs } from "../../../src/ops/retention.js";
import { ManualClock } from "../../support/clock.js";
import { openTestDatabase, type TestDatabase } from "../../support/database.js";
import { forEachDriver } from "../../support/drivers.js";

const DAY = 86_400_000;
const HOUR = 3_600_000;

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("ops_retention"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

function setup() {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  const ok = app.task("ok", async () => "done");
  const cancels = app.task("cancels", async () => { throw new Cancel(); });
  const fails = app.task("fails", async () => { throw new Fail("no"); });
  return { clock, app, ok, cancels, fails };
}

const countByState = async () => Object.fromEntries(
  (await t.rows<{ state: string; n: number }>("select state, count(*)::int as n from akadze.all_jobs group by state")).map((r) => [r.state, r.n]));

describe("retention", () => {
  it("invocations delete succeeded and cancelled jobs past the retention age and keep failed ones", async () => {
    const { clock, app, ok, cancels, fails } = setup();
    await ok.using(t.db).enqueueMany([{}, {}, {}]);
    await cancels.using(t.db).enqueueMany([{}, {}]);
    await fails.using(t.db).enqueueMany([{}, {}]);
    await ok.using(t.db, { delay: "30d" }).enqueue({});
    await runOnce(app, { db: t.db, now: clock.now });
    expect(await countByState()).toEqual({ succeeded: 3, cancelled: 2, failed: 2, queued: 1 });

    clock.advance(6 * DAY);
    await runOnce(app, { db: t.db, now: clock.now });
    expect(await countByState()).toEqual({ succeeded: 3, cancelled: 2, failed: 2, queued: 1 });

    clock.advance(2 * DAY); // 8 days after they finished: past the default 7 days
    await runOnce(app, { db: t.db, now: clock.now });
    expect(await countByState()).toEqual({ failed: 2, queued: 1 });
  });

  it("failed jobs are deleted too when the retention names an age for them", async () => {
    const { clock, app, fails, ok } = setup();
    await fails.using(t.db).enqueue({});
    await ok.using(t.db).enqueue({});
    await runOnce(app, { db: t.db, now: clock.now });
    clock.advance(10 * DAY);
    await runOnce(app, { db: t.db, now: clock.now, retention: { finished: "7d", failed: "30d" } });
    expect(await countByState()).toEqual({ failed: 1 });
    clock.advance(21 * DAY);
    await runOnce(app, { db: t.db, now: clock.now, retention: { finished: "7d", failed: "30d" } });
    expect(await countByState()).toEqual({});
  });

  it("rows no partition holds (the default partition's) go one bounded batch per invocation", async () => {
    const { clock, app, ok } = setup();
    await ok.using(t.db).enqueueMany(Array.from({ length: 25 }, () => ({})));
    // No retention, so no maintenance made partitions: the jobs finish into the default partition.
    await runOnce(app, { db: t.db, now: clock.now, retention: false });
    expect(await t.rows("select count(*)::int as n from akadze.job_history_default")).toEqual([{ n: 25 }]);
    clock.advance(8 * DAY);
    const remaining: number[] = [];
    for (let i = 0; i < 3; i++) {
      await runOnce(app, { db: t.db, now: clock.now, retention: { batch: 10 } });
      remaining.push((await countByState()).succeeded ?? 0);
    }
    expect(remaining).toEqual([15, 5, 0]);
  });

  it("the history's retention is one statement beside the claim, sent only when a claim finds work for it", async () => {
    const { clock, app, ok } = setup();
    await ok.using(t.db).enqueueMany(Array.from({ length: 5 }, () => ({})));
    await runOnce(app, { db: t.db, now: clock.now });
    clock.advance(8 * DAY);
    await ok.using(t.db).enqueue({});
    const summary = await runOnce(app, { db: t.db, now: clock.now });
    expect(summary.roundTrips).toBe(3); // the claim (with the check and the row pruning), the maintenance, the completion
    expect(await countByState()).toEqual({ succeeded: 1 });
    await ok.using(t.db).enqueue({});
    expect((await runOnce(app, { db: t.db, now: clock.now })).roundTrips).toBe(2); // nothing due: the claim and the completion
  });

  it("the jobs and their history stay bounded under sustained load across many batches", async () => {
    const { clock, app, ok } = setup();
    const perRound = 40;
    const rounds = 40;
    let largest = 0;
    let workersLargest = 0;
    for (let round = 0; round < rounds; round++) {
      await ok.using(t.db).enqueueMany(Array.from({ length: perRound }, () => ({})));
      const summary = await runOnce(app, { db: t.db, now: clock.now, batchSize: perRound, retention: "6h" });
      expect(summary.succeeded).toBe(perRound);
      largest = Math.max(largest, (await t.rows("select count(*)::int as n from akadze.all_jobs"))[0].n);
      workersLargest = Math.max(workersLargest, (await t.rows("select count(*)::int as n from akadze.workers"))[0].n);
      clock.advance(HOUR);
    }
    // Jobs finished in the last 6 hours (one batch per hour) plus the batch just run: at most 7 batches,
    // while 1,600 jobs ran. Registry rows last a day: at most 25 invocations.
    expect(largest).toBeLessThanOrEqual(7 * perRound);
    expect(largest).toBeGreaterThanOrEqual(6 * perRound);
    expect(workersLargest).toBeLessThanOrEqual(25);
    expect(workersLargest).toBeGreaterThanOrEqual(24);
  });

  it("queued and running jobs are never pruned, however old", async () => {
    const { clock, app, ok } = setup();
    const later = createApp({ clock: clock.now }).task("not-this-app", async () => {});
    const id = await later.using(t.db).enqueue({});
    await t.rows("update akadze.jobs set created_at = created_at - interval '400 days', run_at = run_at - interval '400 days'");
    await ok.using(t.db).enqueue({});
    clock.advance(365 * DAY);
    await runOnce(app, { db: t.db, now: clock.now, retention: { finished: 0, failed: 0 } });
    expect(await t.rows("select id, state from akadze.all_jobs order by id")).toEqual([{ id: String(id), state: "queued" }, { id: "2", state: "succeeded" }]);
  });

  it("a bad retention is a clear error and nothing is claimed", async () => {
    const { clock, app, ok } = setup();
    await ok.using(t.db).enqueue({});
    await expect(runOnce(app, { db: t.db, now: clock.now, retention: "a week" as never })).rejects.toThrow(/retention/);
    await expect(runOnce(app, { db: t.db, now: clock.now, retention: { batch: 0 } })).rejects.toThrow(/batch must be at least 1/);
    expect(await countByState()).toEqual({ queued: 1 });
  });

  it("pruneJobs deletes failed jobs older than an age on request", async () => {
    const { clock, app, fails } = setup();
    await fails.using(t.db).enqueueMany([{}, {}]);
    await runOnce(app, { db: t.db, now: clock.now });
    clock.advance(40 * DAY);
    await fails.using(t.db).enqueue({});
    await runOnce(app, { db: t.db, now: clock.now });
    expect(await pruneJobs(t.db, { olderThan: "30d", states: ["failed"], now: clock.now() })).toEqual({ deleted: 2 });
    expect(await countByState()).toEqual({ failed: 1 });
    await expect(pruneJobs(t.db, { states: ["queued" as never] })).rejects.toThrow(/succeeded, cancelled, rate_limited or failed/);
  });
});

describe("retention and the registry on every driver", () => {
  forEachDriver((h) => {
    it("an invocation prunes old finished jobs and records itself in its own statements", async () => {
      const { clock, app, ok, fails } = setup();
      await ok.using(h().db).enqueueMany([{}, {}]);
      await fails.using(h().db).enqueue({});
      await runOnce(app, { db: h().db, now: clock.now, id: "inv-a" });
      expect(await h().rows("select id, jobs_done from akadze.workers")).toEqual([{ id: "inv-a", jobs_done: 3 }]);
      clock.advance(8 * DAY);
      await ok.using(h().db).enqueue({});
      const summary = await runOnce(app, { db: h().db, now: clock.now, id: "inv-b" });
      expect(summary.roundTrips).toBe(3); // the claim (with the registry), the history's maintenance, the completion
      expect(await h().rows("select state from akadze.all_jobs order by id")).toEqual([{ state: "failed" }, { state: "succeeded" }]);
      // inv-a's row went too: registry rows last a day.
      expect(await h().rows("select id, kind, jobs_done, stopped_at is not null as stopped from akadze.workers order by id")).toEqual([
        { id: "inv-b", kind: "invocation", jobs_done: 1, stopped: true }]);
    });
  });
});
