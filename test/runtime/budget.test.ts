// An invocation starts a job only while its budget still holds the run (its timeout, or for a task without one what
// its runs take: twice their average, at most CLAIM_MARGIN_MS); the rest go back to `queued` unspent for the next. On the
// real clock the budget is measured on the monotonic clock: a wall-clock step neither fails jobs nor stretches it.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import * as v from "valibot";
import { Hono } from "hono";
import { createApp, runOnce } from "../../src/index.js";
import { akadzeRoutes } from "../../src/edge/hono.js";
import { forEachDriver } from "../support/drivers.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { ManualClock } from "../support/clock.js";
import { deferred } from "../support/deferred.js";
import { BudgetClock } from "../../src/runtime/budget-clock.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("budget_clock"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

const SECRET = "budget-test";

describe("a task whose timeout no longer fits, through the work route", () => {
  forEachDriver((h) => {
    it("jobs that cannot start inside the budget go back to queued with attempts unspent, and the next invocation runs them", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      const started: number[] = [];
      // Each run takes its whole declared timeout of 3 s on the manual clock.
      const slow = app.task("slow", { timeout: "3s" }, async (_args, job) => { started.push(job.id); clock.advance(3_000); });
      const ids = await slow.using(h().db).enqueueMany([{}, {}, {}, {}, {}]);
      const web = new Hono().route("/akadze", akadzeRoutes(app, { db: h().db, secret: SECRET }));
      const work = async () => (await web.fetch(new Request("http://test/akadze/work", {
        method: "POST", headers: { authorization: `Bearer ${SECRET}` }, body: JSON.stringify({ slots: 1, budget: "10s" }),
      }))).json();

      // Starts at 0, 3 and 6 s fit a 10 s budget; at 9 s only 1 s is left, less than a 3 s timeout.
      expect(await work()).toMatchObject({ claimed: 5, succeeded: 3, released: 2, retried: 0, failed: 0 });
      expect(started).toEqual(ids.slice(0, 3));
      const jobs = await h().rows(`select id, state, attempt, errors from akadze.all_jobs order by id`);
      expect(jobs.map((j) => j.state)).toEqual(["succeeded", "succeeded", "succeeded", "queued", "queued"]);
      expect(jobs.slice(3)).toEqual([
        { id: ids[3], state: "queued", attempt: 0, errors: [] },
        { id: ids[4], state: "queued", attempt: 0, errors: [] },
      ]);

      expect(await work()).toMatchObject({ claimed: 2, succeeded: 2, released: 0 });
      expect(started).toEqual(ids);
      expect(await h().rows(`select state, attempt from akadze.all_jobs order by id`)).toEqual(Array(5).fill({ state: "succeeded", attempt: 1 }));
    });
  }, ["node-postgres", "neon-http"]);
});

describe("a task without a timeout at the budget's end", () => {
  it("is released unspent rather than started with too little of the budget to finish", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    // Each run takes 50 ms on the manual clock; 1020 ms of budget leave the 20th start 70 ms, the 21st 20 ms.
    const task = app.task("quick", { maxAttempts: 1, args: v.object({}) }, async () => { clock.advance(50); });
    await task.using(t.db).enqueueMany(Array.from({ length: 30 }, () => ({})));
    const summary = await runOnce(app, { db: t.db, now: clock.now, slots: 1, batchSize: 30, budget: 1020 });
    expect(summary.failed).toBe(0);
    const jobs = await t.rows<{ state: string; attempt: number; errors: unknown[] }>("select state, attempt, errors from akadze.all_jobs order by id");
    expect(jobs.filter((j) => j.state === "failed")).toEqual([]);
    const queued = jobs.filter((j) => j.state === "queued");
    expect(queued.length).toBeGreaterThan(0);
    expect(queued.every((j) => j.attempt === 0 && j.errors.length === 0)).toBe(true);
    expect(summary.succeeded + summary.released).toBe(30);
  });
});

describe("wall-clock steps on the real clock", () => {
  afterEach(() => { vi.useRealTimers(); });

  it("a step forward of 120 s does not time out running jobs", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date());
    const app = createApp();
    const gate = deferred();
    let started = 0;
    const allStarted = deferred();
    const task = app.task("held", { timeout: "5s", maxAttempts: 1, args: v.object({}) }, async () => {
      if (++started === 8) allStarted.resolve();
      await gate.promise;
    });
    await task.using(t.db).enqueueMany(Array.from({ length: 8 }, () => ({})));
    const run = runOnce(app, { db: t.db, slots: 8, batchSize: 8 });
    await allStarted.promise;
    vi.setSystemTime(new Date(Date.now() + 120_000));
    gate.resolve();
    const summary = await run;
    expect(summary).toMatchObject({ succeeded: 8, failed: 0 });
  });

  it("a step back of 20 s does not stretch the budget, and the duration stays what passed", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date());
    const app = createApp();
    let stepped = false;
    // Far more work than the budget: 4,000 jobs of ~5 ms on 4 slots.
    const task = app.task("work", { timeout: "100ms", args: v.object({}) }, async () => {
      if (!stepped) { stepped = true; vi.setSystemTime(new Date(Date.now() - 20_000)); }
      await new Promise((resolve) => setTimeout(resolve, 5));
    });
    await task.using(t.db).enqueueMany(Array.from({ length: 4000 }, () => ({})));
    const began = performance.now();
    const summary = await runOnce(app, { db: t.db, slots: 4, batchSize: 100, budget: "1500ms" });
    const took = performance.now() - began;
    expect(stepped).toBe(true);
    // A stretched budget would run 20 s past the step; anything short of that is the loaded machine's doing.
    expect(took).toBeLessThan(20_000);
    expect(summary.durationMs).toBeGreaterThan(1_000);
    expect(summary.durationMs).toBeLessThanOrEqual(took + 50);
    expect((await t.rows("select count(*)::int as n from akadze.all_jobs where state = 'queued'"))[0].n).toBeGreaterThan(0);
  }, 60_000);
});

describe("the budget's end", () => {
  afterEach(() => { vi.useRealTimers(); });

  it("is told once the budget is spent, and not before, even when its timer fires first", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    const clock = new ManualClock();
    const budget = new BudgetClock(clock.now, false, 20);
    let calls = 0;
    const cancel = budget.whenSpent(() => { calls++; });
    // The timer for the 20 ms left fires when the budget's own clock has not moved (as libuv's can, early): it looks again later.
    vi.advanceTimersByTime(21);
    expect(calls).toBe(0);
    clock.advance(20);
    vi.advanceTimersByTime(21);
    expect(calls).toBe(1);
    vi.advanceTimersByTime(1_000);
    expect(calls).toBe(1);
    cancel();
  });
});
