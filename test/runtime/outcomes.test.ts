// Every row of the outcome table (SPEC §2), on every driver.
import { describe, expect, it } from "vitest";
import * as v from "valibot";
import { sql } from "drizzle-orm";
import { Cancel, createApp, Fail, Retry, runOnce, Snooze, type App } from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";

class VendorError extends Error {}

function setup() {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  return { clock, app };
}

async function job(h: () => { rows: (q: string) => Promise<any[]> }, id: number) {
  const [row] = await h().rows(`select id, state, attempt, max_attempts, result, errors, run_at, finished_at, cancel_requested from akadze.all_jobs where id = ${id}`);
  return row;
}

const secondsUntil = (runAt: string, now: Date) => (new Date(runAt).getTime() - now.getTime()) / 1000;

forEachDriver((h, driver) => {
  const run = (app: App, clock: ManualClock, extra: object = {}) => runOnce(app, { db: h().db, now: clock.now, ...extra });

  it("a job that returns JSON succeeds with its result stored", async () => {
    const { app, clock } = setup();
    const add = app.task("add", { args: v.object({ a: v.number(), b: v.number() }) }, async ({ a, b }) => ({ sum: a + b }));
    const id = await add.using(h().db).enqueue({ a: 2, b: 3 });
    const summary = await run(app, clock);
    expect(summary).toMatchObject({ claimed: 1, succeeded: 1, retried: 0, failed: 0 });
    expect(await job(h, id)).toMatchObject({ state: "succeeded", attempt: 1, result: { sum: 5 }, errors: [] });
  });

  it("a job that returns nothing succeeds with a null result", async () => {
    const { app, clock } = setup();
    const id = await app.task("noop", async () => {}).using(h().db).enqueue({});
    await run(app, clock);
    expect(await job(h, id)).toMatchObject({ state: "succeeded", result: null });
  });

  for (const [label, value] of [["a Date", () => new Date()], ["a Map", () => new Map()], ["a class instance", () => new VendorError("x")],
    ["a BigInt", () => 10n], ["a cycle", () => { const o: any = {}; o.self = o; return o; }]] as const) {
    it(`returning ${label} spends an attempt with ResultNotJson`, async () => {
      const { app, clock } = setup();
      const id = await app.task("odd", async () => value()).using(h().db).enqueue({});
      const summary = await run(app, clock);
      expect(summary.retried).toBe(1);
      const row = await job(h, id);
      expect(row).toMatchObject({ state: "queued", attempt: 1 });
      expect(row.errors).toHaveLength(1);
      expect(row.errors[0]).toMatchObject({ attempt: 1, kind: "ResultNotJson" });
    });
  }

  it("a thrown error spends an attempt, records the error and retries on the default curve", async () => {
    const { app, clock } = setup();
    const id = await app.task("boom", async () => { throw new Error("kaput"); }).using(h().db).enqueue({});
    await run(app, clock);
    const row = await job(h, id);
    expect(row).toMatchObject({ state: "queued", attempt: 1 });
    expect(row.errors[0]).toMatchObject({ attempt: 1, kind: "Error", message: "kaput" });
    expect(row.errors[0].stack).toContain("kaput");
    const delay = secondsUntil(row.run_at, clock.now());
    expect(delay).toBeGreaterThanOrEqual(0.5); // 2^0 s with jitter in [50 %, 100 %]
    expect(delay).toBeLessThanOrEqual(1);
  });

  it("the job fails when its attempts are spent, with every attempt in its errors", async () => {
    const { app, clock } = setup();
    const id = await app.task("always", { maxAttempts: 3 }, async (_a, j) => { throw new Error(`attempt ${j.attempt}`); }).using(h().db).enqueue({});
    for (let i = 0; i < 3; i++) { await run(app, clock); clock.advance(10 * 60_000); }
    const row = await job(h, id);
    expect(row).toMatchObject({ state: "failed", attempt: 3 });
    expect(row.errors.map((e: any) => e.message)).toEqual(["attempt 1", "attempt 2", "attempt 3"]);
    expect(row.finished_at).not.toBeNull();
  });

  it("a timeout aborts job.signal and spends an attempt", async () => {
    const { app, clock } = setup();
    let aborted: unknown;
    const id = await app.task("slow", { timeout: "50ms" }, (_a, j) => new Promise((resolve) => {
      j.signal.addEventListener("abort", () => { aborted = j.signal.reason; resolve("late"); });
    })).using(h().db).enqueue({});
    await run(app, clock);
    expect(String(aborted)).toContain("timeout");
    const row = await job(h, id);
    expect(row).toMatchObject({ state: "queued", attempt: 1 });
    expect(row.errors[0].kind).toBe("JobTimeout");
  });

  it("Retry(delay) spends an attempt and retries after exactly that delay, beating the task's policy", async () => {
    const { app, clock } = setup();
    const id = await app.task("again", { backoff: () => "1h" }, async () => { throw new Retry("10s"); }).using(h().db).enqueue({});
    await run(app, clock);
    const row = await job(h, id);
    expect(row).toMatchObject({ state: "queued", attempt: 1 });
    expect(secondsUntil(row.run_at, clock.now())).toBe(10);
    expect(row.errors[0].kind).toBe("Retry");
  });

  it("Retry is not clamped by the policy limits", async () => {
    const { app, clock } = setup();
    const id = await app.task("far", async () => { throw new Retry("400d"); }).using(h().db).enqueue({});
    await run(app, clock);
    expect(secondsUntil((await job(h, id)).run_at, clock.now())).toBe(400 * 86_400);
  });

  it("Retry on the last attempt fails the job", async () => {
    const { app, clock } = setup();
    const id = await app.task("last", { maxAttempts: 1 }, async () => { throw new Retry("1s"); }).using(h().db).enqueue({});
    await run(app, clock);
    expect(await job(h, id)).toMatchObject({ state: "failed", attempt: 1 });
  });

  it("a snoozed job keeps its attempt and runs again after the delay", async () => {
    const { app, clock } = setup();
    const seen: number[] = [];
    const id = await app.task("poll", { maxAttempts: 1 }, async (_a, j) => {
      seen.push(j.attempt);
      if (seen.length < 3) throw new Snooze("30s");
      return "ready";
    }).using(h().db).enqueue({});
    const first = await run(app, clock);
    expect(first.snoozed).toBe(1);
    let row = await job(h, id);
    expect(row).toMatchObject({ state: "queued", attempt: 0, errors: [] });
    expect(secondsUntil(row.run_at, clock.now())).toBe(30);
    expect((await run(app, clock)).claimed).toBe(0); // not due yet
    clock.advance(30_000); await run(app, clock);
    clock.advance(30_000); await run(app, clock);
    row = await job(h, id);
    expect(row).toMatchObject({ state: "succeeded", attempt: 1, result: "ready" });
    expect(seen).toEqual([1, 1, 1]);
  });

  it("Fail ends the job as failed at once, whatever attempts remain", async () => {
    const { app, clock } = setup();
    const id = await app.task("reject", { maxAttempts: 5 }, async () => { throw new Fail("vendor rejected the export"); }).using(h().db).enqueue({});
    const summary = await run(app, clock);
    expect(summary.failed).toBe(1);
    const row = await job(h, id);
    expect(row).toMatchObject({ state: "failed", attempt: 1 });
    expect(row.errors[0]).toMatchObject({ kind: "Fail", message: "vendor rejected the export" });
  });

  it("Cancel ends the job as cancelled at once", async () => {
    const { app, clock } = setup();
    const id = await app.task("stop", async () => { throw new Cancel(); }).using(h().db).enqueue({});
    expect((await run(app, clock)).cancelled).toBe(1);
    expect(await job(h, id)).toMatchObject({ state: "cancelled" });
  });

  it("retryOn narrows which errors retry: others fail the job at once", async () => {
    const { app, clock } = setup();
    const task = app.task("vendor", {
      args: v.object({ kind: v.string() }), maxAttempts: 5, retryOn: (e) => e instanceof VendorError,
    }, async ({ kind }) => {
      throw kind === "vendor" ? new VendorError("503") : new TypeError("bug");
    });
    const retried = await task.using(h().db).enqueue({ kind: "vendor" });
    const failed = await task.using(h().db).enqueue({ kind: "bug" });
    await run(app, clock);
    expect(await job(h, retried)).toMatchObject({ state: "queued", attempt: 1 });
    expect(await job(h, failed)).toMatchObject({ state: "failed", attempt: 1 });
  });

  describe("backoff policies", () => {
    it("a task's policy sets the delay", async () => {
      const { app, clock } = setup();
      const id = await app.task("p", { backoff: (attempt) => attempt * 60_000 }, async () => { throw new Error("x"); }).using(h().db).enqueue({});
      await run(app, clock);
      expect(secondsUntil((await job(h, id)).run_at, clock.now())).toBe(60);
    });

    it("a policy that throws or returns garbage falls back to the default curve", async () => {
      const { app, clock } = setup();
      const throws = await app.task("t1", { backoff: () => { throw new Error("bad policy"); } }, async () => { throw new Error("x"); }).using(h().db).enqueue({});
      const garbage = await app.task("t2", { backoff: () => "soon" as any }, async () => { throw new Error("x"); }).using(h().db).enqueue({});
      await run(app, clock);
      for (const id of [throws, garbage]) {
        const delay = secondsUntil((await job(h, id)).run_at, clock.now());
        expect(delay).toBeGreaterThanOrEqual(0.5);
        expect(delay).toBeLessThanOrEqual(1);
      }
    });

    it("policy delays are clamped to [0, 365 days]", async () => {
      const { app, clock } = setup();
      const negative = await app.task("neg", { backoff: () => -5000 as any }, async () => { throw new Error("x"); }).using(h().db).enqueue({});
      const huge = await app.task("huge", { backoff: () => "1000d" }, async () => { throw new Error("x"); }).using(h().db).enqueue({});
      const infinite = await app.task("inf", { backoff: () => Infinity as any }, async () => { throw new Error("x"); }).using(h().db).enqueue({});
      await run(app, clock);
      expect(secondsUntil((await job(h, negative)).run_at, clock.now())).toBe(0);
      expect(secondsUntil((await job(h, huge)).run_at, clock.now())).toBe(365 * 86_400);
      expect(secondsUntil((await job(h, infinite)).run_at, clock.now())).toBe(365 * 86_400);
    });
  });

  describe("hooks", () => {
    it("beforeRun and afterRun wrap a body that returned; onTransition sees every state change", async () => {
      const { app, clock } = setup();
      const events: string[] = [];
      app.hooks.beforeRun((j) => { events.push(`before ${j.task}#${j.attempt}`); });
      app.hooks.afterRun((j, result) => { events.push(`after ${j.task} ${JSON.stringify(result)}`); });
      app.hooks.onTransition((t) => { events.push(`${t.task}: ${t.from} -> ${t.to}`); });
      await app.task("ok", async () => 42).using(h().db).enqueue({});
      await run(app, clock);
      expect(events).toEqual(["ok: queued -> running", "before ok#1", "after ok 42", "ok: running -> succeeded"]);
    });

    it("onTransition carries the error recorded with a failed attempt", async () => {
      const { app, clock } = setup();
      const seen: unknown[] = [];
      app.hooks.onTransition((t) => { if (t.from === "running") seen.push({ to: t.to, error: t.error }); });
      await app.task("bad", { maxAttempts: 1 }, async () => { throw new TypeError("wrong shape"); }).using(h().db).enqueue({});
      await run(app, clock);
      expect(seen).toEqual([{ to: "failed", error: { kind: "TypeError", message: "wrong shape" } }]);
    });

    it("afterRun is skipped when the body threw", async () => {
      const { app, clock } = setup();
      const after: unknown[] = [];
      app.hooks.afterRun((_j, r) => { after.push(r); });
      await app.task("bad", async () => { throw new Error("no"); }).using(h().db).enqueue({});
      await run(app, clock);
      expect(after).toEqual([]);
    });

    it("an afterRun hook that throws spends an attempt and the retry runs the body again", async () => {
      const { app, clock } = setup();
      let bodyRuns = 0;
      let hookCalls = 0;
      app.hooks.afterRun(() => { if (++hookCalls === 1) throw new Error("hook failed"); });
      const id = await app.task("twice", async () => { bodyRuns++; return "done"; }).using(h().db).enqueue({});
      await run(app, clock);
      expect(await job(h, id)).toMatchObject({ state: "queued", attempt: 1 });
      clock.advance(60_000);
      await run(app, clock);
      expect(bodyRuns).toBe(2);
      expect(await job(h, id)).toMatchObject({ state: "succeeded", attempt: 2 });
    });

    // neon-http has no interactive transactions: there hooks run right after the change commits.
    if (driver !== "neon-http") it("onTransition runs in the transaction of the change: a throwing hook's writes are undone, the change stands and the failure is on the job", async () => {
      const { app, clock } = setup();
      app.hooks.onTransition(async (t, tx) => {
        if (t.to !== "running") return;
        await tx.execute(sql`update akadze.jobs set priority = 99 where id = ${t.jobId}`); // undone with the hook
        throw new Error("veto");
      });
      const id = await app.task("vetoed", async () => 1).using(h().db).enqueue({});
      await run(app, clock);
      const row = await job(h, id);
      expect(row).toMatchObject({ state: "succeeded", attempt: 1 });
      expect(await h().rows(`select priority, errors->0->>'kind' as kind from akadze.all_jobs where id = ${id}`)).toEqual([{ priority: 0, kind: "TransitionHookFailed" }]);
    });

    it("every errors entry akadze makes is stamped by the app's clock: a handler's throw, a throwing hook, a result too large to store", async () => {
      const { app, clock } = setup();
      clock.set("2031-03-04T05:06:07Z");
      app.hooks.onTransition((t) => { if (t.task === "hooked" && t.to === "running") throw new Error("hook down"); });
      const thrown = await app.task("thrown", { maxAttempts: 1 }, async () => { throw new Error("down"); }).using(h().db).enqueue({});
      const hooked = await app.task("hooked", async () => 1).using(h().db).enqueue({});
      const huge = await app.task("huge", async () => ({ blob: "z".repeat(1024 * 1024 + 1) })).using(h().db).enqueue({});
      await run(app, clock);
      const rows = await h().rows(`select id, errors->0->>'kind' as kind, errors->0->>'at' as at from akadze.all_jobs order by id`);
      const at = (id: number) => new Date(rows.find((r) => r.id === id)!.at).toISOString();
      expect(rows.map((r) => r.kind)).toEqual(["Error", "TransitionHookFailed", "OutcomeNotStorable"]);
      for (const id of [thrown, hooked, huge]) expect(at(id)).toBe("2031-03-04T05:06:07.000Z");
    });
  });
});
