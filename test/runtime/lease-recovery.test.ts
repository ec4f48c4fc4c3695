// Leases: a vanished invocation's jobs are recovered once their lease expires, charged an attempt; stopping on purpose
// and the budget release jobs that never started, unspent; and runOnce's statements do not grow with its batch.
import { expect, it } from "vitest";
import * as v from "valibot";
import { createApp, runOnce } from "../../src/index.js";
import { queryJson } from "../../src/db/query.js";
import { claimJobsStatement } from "../../src/sql/claim/claim.js";
import { type ClaimAnswer } from "../../src/sql/claim/claim-answer.js";
import { timestamp } from "../../src/sql/time.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";

const LEASE_MS = 30_000;

forEachDriver((h) => {
  const job = async (id: number) => (await h().rows(`select state, attempt, errors, run_at, lease_owner from akadze.all_jobs where id = ${id}`))[0];

  /** An invocation that claims, hands every job to a slot (bodies may have started) and then vanishes, never completing. */
  const vanish = (clock: ManualClock, tasks: string[]) => queryJson<ClaimAnswer>(h().db, claimJobsStatement({
    owner: "vanished-invocation", now: timestamp(clock.now()), leaseMs: LEASE_MS, batchSize: 10, startCount: 10, tasks, queues: null, limits: true,
  }));

  it("a vanished invocation's job is recovered after its lease expires, with an attempt spent and the default curve", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let runs = 0;
    const id = await app.task("t", { backoff: () => "1h" }, async () => { runs++; }).using(h().db).enqueue({});
    expect((await vanish(clock, ["t"])).claimed).toHaveLength(1);

    clock.advance(LEASE_MS - 1000);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ claimed: 0, recovered: 0 });
    expect(await job(id)).toMatchObject({ state: "running", lease_owner: "vanished-invocation" });

    clock.advance(2000);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ recovered: 1 });
    const recovered = await job(id);
    expect(recovered).toMatchObject({ state: "queued", attempt: 1, lease_owner: null });
    expect(recovered.errors).toMatchObject([{ attempt: 1, kind: "LeaseExpired" }]);
    const delay = new Date(recovered.run_at).getTime() - clock.now().getTime();
    expect(delay).toBeGreaterThanOrEqual(500); // the default curve, not the task's "1h" policy
    expect(delay).toBeLessThanOrEqual(1000);

    clock.advance(1000);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(runs).toBe(1);
    expect(await job(id)).toMatchObject({ state: "succeeded", attempt: 2 });
  });

  it("a vanished invocation's job on its last attempt is failed by the recovery", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const id = await app.task("t", { maxAttempts: 1 }, async () => {}).using(h().db).enqueue({});
    await vanish(clock, ["t"]);
    clock.advance(LEASE_MS + 1);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(await job(id)).toMatchObject({ state: "failed", attempt: 1 });
  });

  it("a recovery's transitions carry the LeaseExpired error it records; a job that never started gets none", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const seen = new Map<string, { to: string; error?: { kind: string; message: string } }>();
    app.hooks.onTransition((t) => { if (t.from === "running" && !seen.has(t.task)) seen.set(t.task, { to: t.to, error: t.error }); });
    await app.task("spent", async () => {}).using(h().db).enqueue({});
    await app.task("last", { maxAttempts: 1 }, async () => {}).using(h().db).enqueue({});
    await vanish(clock, ["spent", "last"]);
    await app.task("prefetched", async () => {}).using(h().db).enqueue({});
    await queryJson(h().db, claimJobsStatement({ // taken, never handed to a slot
      owner: "vanished-invocation", now: timestamp(clock.now()), leaseMs: LEASE_MS, batchSize: 10, startCount: 0, tasks: ["prefetched"], queues: null, limits: true,
    }));
    clock.advance(LEASE_MS + 1);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ recovered: 3 });

    const leaseExpired = { kind: "LeaseExpired", message: "the invocation running this job stopped renewing its lease" };
    expect(Object.fromEntries(seen)).toEqual({
      spent: { to: "queued", error: leaseExpired }, last: { to: "failed", error: leaseExpired }, prefetched: { to: "queued", error: undefined },
    });
  });

  it("a run that lost its lease mid-body records nothing: the recovering invocation's view stands", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let inner: unknown;
    const id = await app.task("t", async () => {
      if (inner) return "second run";
      clock.advance(LEASE_MS + 1);
      inner = await runOnce(app, { db: h().db, now: clock.now }); // another invocation recovers this job
      return "first run";
    }).using(h().db).enqueue({});
    // A heartbeat just under the 30 s lease: no beat comes while the test runs.
    const outer = await runOnce(app, { db: h().db, now: clock.now, heartbeat: "29s" });
    expect(inner).toMatchObject({ recovered: 1 });
    expect(outer).toMatchObject({ succeeded: 0, lost: 1 });
    expect(await job(id)).toMatchObject({ state: "queued", attempt: 1 });
  });

  it("stopping on purpose releases claimed jobs that never started, attempts unspent", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const stop = new AbortController();
    let runs = 0;
    const task = app.task("t", async () => { runs++; stop.abort(); });
    await task.using(h().db).enqueueMany([{}, {}, {}, {}]);
    // One claim (drain: false) of the whole batch: three jobs wait for the one slot.
    const summary = await runOnce(app, { db: h().db, now: clock.now, slots: 1, signal: stop.signal, drain: false });
    expect(summary).toMatchObject({ claimed: 4, succeeded: 1, released: 3 });
    expect(runs).toBe(1);
    expect(await h().rows("select state, attempt from akadze.all_jobs where state = 'queued' order by id"))
      .toEqual([{ state: "queued", attempt: 0 }, { state: "queued", attempt: 0 }, { state: "queued", attempt: 0 }]);
  });

  it("no job starts whose timeout would outlive the budget; the unstarted go back unspent and the next invocation finishes them", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const task = app.task("slow", { timeout: "10s", args: v.object({ n: v.number() }) }, async () => { clock.advance(10_000); });
    await task.using(h().db).enqueueMany([1, 2, 3, 4, 5].map((n) => ({ n })));
    const first = await runOnce(app, { db: h().db, now: clock.now, slots: 1, budget: "25s" });
    expect(first).toMatchObject({ claimed: 5, succeeded: 2, released: 3 });
    expect(await h().rows("select attempt from akadze.all_jobs where state = 'queued'")).toEqual([{ attempt: 0 }, { attempt: 0 }, { attempt: 0 }]);
    const second = await runOnce(app, { db: h().db, now: clock.now, slots: 1, budget: "35s" });
    expect(second).toMatchObject({ claimed: 3, succeeded: 3, released: 0 });
  });

  it("tasks whose timeout exceeds the budget are not claimed at all", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    await app.task("long", { timeout: "60s" }, async () => {}).using(h().db).enqueue({});
    app.task("short", { timeout: "5s" }, async () => {});
    // The summary names the tasks the budget leaves out, so a misfit is visible rather than silent.
    expect(await runOnce(app, { db: h().db, now: clock.now, budget: "25s" })).toMatchObject({ claimed: 0, tooLongForBudget: ["long"] });
    expect(await runOnce(app, { db: h().db, now: clock.now, budget: "90s" })).toMatchObject({ claimed: 1, succeeded: 1, tooLongForBudget: [] });
  });

  it("the statements of runOnce for a batch of B no-op jobs do not grow with B", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const noop = app.task("noop", async () => {});
    const trips: number[] = [];
    for (const size of [1, 10, 100, 400]) {
      await noop.using(h().db).enqueueMany(Array.from({ length: size }, () => ({})));
      const summary = await runOnce(app, { db: h().db, now: clock.now, batchSize: size, slots: size });
      expect(summary.succeeded).toBe(size);
      trips.push(summary.roundTrips);
    }
    // One claim plus at most two coalesced completions, whatever the batch size.
    for (const t of trips) expect(t).toBeLessThanOrEqual(3);
  });
});
