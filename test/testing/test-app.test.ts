// akadze/testing (issue 40, item 1): testApp runs an app's jobs inline on a test clock, on the caller's
// database (PGlite and real Postgres here) or, with no db, on an in-memory PGlite of its own.
import { afterEach, describe, expect, it } from "vitest";
import * as v from "valibot";
import { AkadzeError, createApp, InvalidInput, Retry, sendEvent } from "../../src/index.js";
import { testApp, type TestApp } from "../../src/testing/index.js";
import { forEachDriver } from "../support/drivers.js";

const MINUTE = 60_000;

forEachDriver((h) => {
  let t: TestApp | undefined;
  afterEach(async () => { await t?.close(); t = undefined; });

  it("drain runs every due job, and the jobs those enqueue; enqueued() reads them typed, in enqueue order, with state", async () => {
    const app = createApp();
    const receipt = app.task("orders.receipt", { args: v.object({ orderId: v.number() }) }, async ({ orderId }) => `sent ${orderId}`);
    const placed = app.task("orders.placed", { args: v.object({ orderId: v.number() }) }, async ({ orderId }) => {
      await receipt.using(h().db).enqueue({ orderId }); // app code enqueues at the database's now()
    });
    t = await testApp(app, { db: h().db });
    await placed.using(t.db).enqueueMany([{ orderId: 1 }, { orderId: 2 }]);

    const summary = await t.drain();
    expect(summary).toMatchObject({ claimed: 4, succeeded: 4, failed: 0, retried: 0 });
    const receipts = await t.enqueued(receipt);
    expect(receipts.map((j) => [j.args.orderId, j.state, j.result])).toEqual([[1, "succeeded", "sent 1"], [2, "succeeded", "sent 2"]]);
    expect(receipts[0].id).toBeLessThan(receipts[1].id);
    expect((await t.jobs()).map((j) => j.task)).toEqual(["orders.placed", "orders.placed", "orders.receipt", "orders.receipt"]);
    expect(await t.drain()).toMatchObject({ runs: 0, claimed: 0 });
  });

  it("a delayed job waits for the clock: drain leaves it queued until the clock passes its delay", async () => {
    const app = createApp();
    const remind = app.task("remind", async () => "reminded");
    t = await testApp(app, { db: h().db });
    await remind.using(t.db, { delay: "5m" }).enqueue({});

    expect((await t.drain()).claimed).toBe(0);
    t.clock.advance(4 * MINUTE);
    expect((await t.drain()).claimed).toBe(0);
    expect((await t.enqueued(remind)).map((j) => j.state)).toEqual(["queued"]);
    t.clock.advance("1m");
    expect((await t.drain()).succeeded).toBe(1);
    expect((await t.enqueued(remind)).map((j) => j.state)).toEqual(["succeeded"]);
  });

  it("a job enqueued at the database's now() after the clock moved a day is due at once, and the plain sendEvent wakes a step", async () => {
    const app = createApp();
    const ping = app.task("ping", async () => "pong");
    const waiter = app.workflow("waiter", async (_args, step) => step.waitForEvent<{ ok: boolean }>("go", { timeout: "1h" }));
    t = await testApp(app, { db: h().db });
    t.clock.advance("1d");
    await ping.using(h().db).enqueue({}); // no clock of the app's: run_at is the database's now()
    await waiter.using(h().db).enqueue({});
    await t.drain();
    expect((await t.enqueued(ping))[0].state).toBe("succeeded");
    // The database's clock is behind the test clock: the step waits (until the test clock's now + 1 h) and the event still reaches it.
    expect(await sendEvent(h().db, "go", { ok: true })).toEqual({ delivered: 1, woken: 1 });
    await t.drain();
    expect((await t.enqueued(waiter))[0]).toMatchObject({ state: "succeeded", result: { ok: true } });
  });

  it("a failed run retries once the clock passes its backoff", async () => {
    const app = createApp();
    let calls = 0;
    const flaky = app.task("flaky", { maxAttempts: 3, backoff: () => 10 * MINUTE }, async () => {
      if (++calls < 3) throw new Error(`down (${calls})`);
      return "up";
    });
    t = await testApp(app, { db: h().db });
    await flaky.using(t.db).enqueue({});

    expect(await t.drain()).toMatchObject({ retried: 1, succeeded: 0 });
    expect((await t.drain()).claimed).toBe(0); // the backoff has not passed
    const [waiting] = await t.enqueued(flaky, { state: "queued" });
    expect(new Date(waiting.runAt).getTime() - t.clock.now().getTime()).toBeGreaterThan(9 * MINUTE);
    t.clock.advance("10m");
    expect(await t.drain()).toMatchObject({ retried: 1, succeeded: 0 });
    t.clock.advance("10m");
    expect(await t.drain()).toMatchObject({ succeeded: 1 });
    const [job] = await t.enqueued(flaky);
    expect(job).toMatchObject({ state: "succeeded", attempt: 3, result: "up" });
    expect(job.errors.map((e) => e.message)).toEqual(["down (1)", "down (2)"]);
  });

  it("a workflow's sleep wakes when the clock passes it, its event wait when t.sendEvent delivers the event", async () => {
    const app = createApp();
    const steps: string[] = [];
    const onboard = app.workflow("onboard", { args: v.object({ userId: v.number() }) }, async ({ userId }, step) => {
      await step.run("welcome", () => { steps.push("welcome"); });
      await step.sleep("wait-a-day", "1d");
      await step.run("tips", () => { steps.push("tips"); });
      const verified = await step.waitForEvent<{ userId: number }>("verified", { event: "user.verified", match: { userId }, timeout: "7d" });
      return verified ? "verified" : "never verified";
    });
    t = await testApp(app, { db: h().db });
    await onboard.using(t.db).enqueue({ userId: 7 });

    await t.drain();
    expect(steps).toEqual(["welcome"]);
    t.clock.advance("23h");
    await t.drain();
    expect(steps).toEqual(["welcome"]);
    t.clock.advance("1h");
    await t.drain();
    expect(steps).toEqual(["welcome", "tips"]);
    expect(await t.sendEvent("user.verified", { userId: 8 })).toMatchObject({ delivered: 0, woken: 0, started: [] });
    expect(await t.sendEvent("user.verified", { userId: 7 })).toMatchObject({ delivered: 1, woken: 1, started: [] });
    await t.drain();
    expect((await t.enqueued(onboard))[0]).toMatchObject({ state: "succeeded", result: "verified" });
    expect(steps).toEqual(["welcome", "tips"]);
  });

  it("runUntilIdle moves the clock to each next run time until nothing is queued, and not past maxAdvance", async () => {
    const app = createApp();
    const nag = app.workflow("nag", async (_args, step) => {
      await step.sleep("first", "1h");
      await step.sleep("second", "2d");
      return step.waitForEvent("answer", { timeout: "7d" });
    });
    t = await testApp(app, { db: h().db });
    await nag.using(t.db).enqueue({});

    const first = await t.runUntilIdle({ maxAdvance: "1d" }); // wakes the first sleep; the second lies beyond a day
    // About an hour: the clock also follows the real one, so the run time came a few milliseconds nearer meanwhile.
    expect(first.advancedMs).toBeGreaterThan(59 * MINUTE);
    expect(first.advancedMs).toBeLessThanOrEqual(60 * MINUTE);
    expect((await t.enqueued(nag))[0].state).toBe("queued");
    const rest = await t.runUntilIdle(); // the second sleep, then the event's timeout
    expect(rest.advancedMs).toBeGreaterThan(9 * 24 * 60 * MINUTE - MINUTE);
    expect(rest.advancedMs).toBeLessThanOrEqual(9 * 24 * 60 * MINUTE);
    expect((await t.enqueued(nag))[0]).toMatchObject({ state: "succeeded", result: null });
  });

  it("a task that enqueues itself ends drain with an error naming it, after maxRuns", async () => {
    const app = createApp();
    const tick = app.task("loop.tick", async () => { await tick.using(h().db).enqueue({}); });
    const calm = app.task("calm", async () => {});
    t = await testApp(app, { db: h().db, maxRuns: 5 });
    await calm.using(t.db).enqueue({});
    await tick.using(t.db).enqueue({});
    const error = await t.drain().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AkadzeError);
    expect((error as Error).message).toMatch(/^drain: jobs were still coming after 5 runs \(maxRuns\): "loop\.tick" \(\d+ enqueued since it began, 1 queued, 1 due now\)/);
    expect((error as Error).message).not.toMatch(/calm/);
    // A bound large enough for the work is not an error; the loop of a workflow that keeps sleeping is found by runUntilIdle too.
    const sleeper = app.workflow("sleeper", async (_args, step) => { for (let i = 0; ; i++) await step.sleep(`nap-${i}`, "1h"); });
    await h().reset();
    await sleeper.using(t.db).enqueue({});
    await expect(t.runUntilIdle({ maxRuns: 4 })).rejects.toThrow(/^runUntilIdle: jobs were still coming after 4 runs \(maxRuns\): "sleeper" \(0 enqueued since it began, 1 queued, 0 due now\)/);
  });

  it("enqueued() filters by state, queue and a partial args match; it refuses a task of another app", async () => {
    const app = createApp();
    const mail = app.task("mail.send", { args: v.object({ to: v.string(), kind: v.string() }) }, async ({ to }) => {
      if (to === "bounce@x") throw new Retry("1h");
    });
    t = await testApp(app, { db: h().db });
    await mail.using(t.db).enqueueMany([{ to: "a@x", kind: "welcome" }, { to: "bounce@x", kind: "welcome" }, { to: "a@x", kind: "digest" }]);
    await mail.using(t.db, { queue: "slow", delay: "1d" }).enqueue({ to: "b@x", kind: "digest" });
    await t.drain();

    expect((await t.enqueued(mail, { args: { to: "a@x" } })).map((j) => j.args.kind)).toEqual(["welcome", "digest"]);
    expect((await t.enqueued(mail, { state: "queued" })).map((j) => j.args.to)).toEqual(["bounce@x", "b@x"]);
    expect((await t.enqueued(mail, { state: ["succeeded", "queued"], queue: "slow" })).map((j) => j.args.to)).toEqual(["b@x"]);
    expect(await t.enqueued(mail, { state: "failed" })).toEqual([]);
    const other = createApp().task("mail.send", async () => {});
    await expect(t.enqueued(other)).rejects.toThrow(/enqueued: give a task of this app .*"mail\.send" is not one/);
  });

  it("a debounced task's job runs once its window passes on the clock; enqueued() reads its payloads typed", async () => {
    const app = createApp();
    const reindex = app.debounced("search.reindex", { args: v.object({ id: v.number() }), window: "5s" }, async (docs) => docs.length);
    t = await testApp(app, { db: h().db });
    await reindex.using(t.db, { key: "catalog" }).enqueue({ id: 1 });
    await reindex.using(t.db, { key: "catalog" }).enqueue({ id: 2 });
    expect((await t.drain()).claimed).toBe(0);
    t.clock.advance("5s");
    expect((await t.drain()).succeeded).toBe(1);
    const [job] = await t.enqueued(reindex);
    expect(job.args.map((payload) => payload.id)).toEqual([1, 2]);
    expect(job).toMatchObject({ state: "succeeded", result: 2 });
  });

  it("with an app that has a clock of its own, the test clock is that clock moved forward: its times are exact", async () => {
    const app = createApp({ clock: () => new Date("2026-06-01T12:00:00Z") });
    const remind = app.task("remind", async () => "reminded");
    t = await testApp(app, { db: h().db });
    const start = t.clock.now();
    expect(start.toISOString()).toBe("2026-06-01T12:00:00.001Z");
    await remind.using(t.db, { delay: "5m" }).enqueue({});
    expect((await t.enqueued(remind))[0].runAt).toBe("2026-06-01T12:05:00.000Z");
    t.clock.advance("4m");
    expect((await t.drain()).claimed).toBe(0);
    t.clock.advance("1m");
    expect((await t.drain()).succeeded).toBe(1);
    expect(t.clock.now().getTime() - start.getTime()).toBe(5 * MINUTE);
  });

  it("bad input is refused with InvalidInput and changes nothing", async () => {
    const app = createApp();
    const noop = app.task("noop", async () => {});
    await expect(testApp(app, { db: h().db, slots: 0 })).rejects.toThrow(/testApp options.*slots must be at least 1/);
    await expect(testApp(app, { db: h().db, maxRuns: Number.NaN })).rejects.toThrow(InvalidInput);
    t = await testApp(app, { db: h().db });
    await noop.using(t.db, { delay: "1m" }).enqueue({});
    const before = t.clock.now().getTime();
    expect(() => t!.clock.advance(-1)).toThrow(/clock\.advance: give a non-negative duration/);
    expect(() => t!.clock.advance("soon" as never)).toThrow(InvalidInput);
    expect(t.clock.now().getTime() - before).toBeLessThan(MINUTE); // not moved
    await expect(t.drain({ maxRuns: 0 })).rejects.toThrow(/drain options.*maxRuns must be at least 1/);
    await expect(t.runUntilIdle({ maxAdvance: "later" as never })).rejects.toThrow(/maxAdvance/);
    await expect(t.jobs({ state: "done" as never })).rejects.toThrow(/state must be one of/);
    await expect(t.jobs({ args: 7 as never })).rejects.toThrow(/args must be JSON/);
    expect((await t.jobs()).map((j) => j.state)).toEqual(["queued"]);
  });
}, ["pglite", "node-postgres"]);

describe("testApp without a database", () => {
  it("runs on a fresh in-memory PGlite with akadze's schema, one per test app, closed by close()", async () => {
    const app = createApp();
    const hello = app.task("hello", { args: v.object({ name: v.string() }) }, async ({ name }) => `hello ${name}`);
    const a = await testApp(app);
    const b = await testApp(app);
    try {
      await hello.using(a.db).enqueue({ name: "ada" });
      expect((await a.drain()).succeeded).toBe(1);
      expect((await a.enqueued(hello))[0]).toMatchObject({ args: { name: "ada" }, state: "succeeded", result: "hello ada" });
      expect(await b.jobs()).toEqual([]); // its own database
    } finally {
      await a.close();
      await b[Symbol.asyncDispose]();
    }
    await expect(a.drain()).rejects.toThrow(/this test app is closed/);
    await a.close(); // twice is fine
  }, 180_000); // two PGlite starts: slow on a busy machine
});
