// On every driver: a timeout is decided by elapsed time; what a body returns after completeBatch is its result;
// declarative retry policies set attempts and delays; limitWait ends a job held back by its limit as rate_limited; and
// three errors say what is wrong. (Issue 14: where the seed documents and the first release differed.)
import { describe, expect, it } from "vitest";
import * as v from "valibot";
import {
  createApp, current, DuplicateJob, InvalidInput, listJobs, listQueues, renderMetrics, requeue, runOnce, setLimit, type App, type Transition,
} from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { deferred } from "../support/deferred.js";

function setup() {
  const clock = new ManualClock();
  return { clock, app: createApp({ clock: clock.now }) };
}

/** Holds the event loop for `ms` of real time, as a CPU-bound body does (no timer can fire meanwhile). */
function blockEventLoop(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* busy */ }
}

forEachDriver((h, driver) => {
  const run = (app: App, clock: ManualClock, extra: object = {}) => runOnce(app, { db: h().db, now: clock.now, ...extra });
  const job = async (id: number) =>
    (await h().rows(`select id, state, attempt, result, errors, run_at, finished_at from akadze.all_jobs where id = ${id}`))[0];

  describe("a timeout is decided by elapsed time", () => {
    it("a body that returns after its timeout by the invocation clock spends an attempt with JobTimeout", async () => {
      const { app, clock } = setup();
      const after: unknown[] = [];
      app.hooks.afterRun((_j, r) => { after.push(r); });
      let signal: AbortSignal | undefined;
      const id = await app.task("slow.sync", { timeout: "100ms", maxAttempts: 3 }, (_a, j) => {
        signal = j.signal;
        clock.advance(500); // the body took 500 ms of the invocation's time, all of it synchronous
        return "late";
      }).using(h().db).enqueue({});
      const summary = await run(app, clock);
      expect(summary).toMatchObject({ succeeded: 0, retried: 1 });
      const row = await job(id);
      expect(row).toMatchObject({ state: "queued", attempt: 1, result: null });
      expect(row.errors[0]).toMatchObject({ kind: "JobTimeout", message: "task slow.sync ran past its timeout of 100 ms" });
      expect(after).toEqual([]); // afterRun runs only inside the timeout
      expect(signal?.aborted).toBe(true);
    });

    it("an async body that overran and then threw is a timeout too, retried with backoff", async () => {
      const { app, clock } = setup();
      const id = await app.task("slow.async", { timeout: "100ms", backoff: () => "1m" }, async () => {
        await Promise.resolve();
        clock.advance(500);
        throw new Error("gave up");
      }).using(h().db).enqueue({});
      await run(app, clock);
      const row = await job(id);
      expect(row).toMatchObject({ state: "queued", attempt: 1 });
      expect(row.errors[0].kind).toBe("JobTimeout");
      expect((new Date(row.run_at).getTime() - clock.now().getTime()) / 1000).toBe(60);
    });

    it("a body that finishes exactly at its timeout succeeds", async () => {
      const { app, clock } = setup();
      const id = await app.task("on.time", { timeout: "10s" }, () => { clock.advance(10_000); return 1; }).using(h().db).enqueue({});
      await run(app, clock);
      expect(await job(id)).toMatchObject({ state: "succeeded", result: 1 });
    });

    // The one case no clock a test can pass expresses: real time spent blocking the event loop, which the
    // monotonic clock measures. 60 ms against a 20 ms timeout keeps the CPU cost small.
    it("a body that blocks the event loop past its timeout in real time spends an attempt", async () => {
      const { app, clock } = setup();
      const id = await app.task("cpu.bound", { timeout: "20ms" }, () => { blockEventLoop(60); return "done"; }).using(h().db).enqueue({});
      await run(app, clock);
      const row = await job(id);
      expect(row).toMatchObject({ state: "queued", attempt: 1, result: null });
      expect(row.errors[0].kind).toBe("JobTimeout");
    });
  });

  describe("the body's return value after completeTx/completeBatch", () => {
    it("completeBatch then return: the job is succeeded with the returned value as its result", async () => {
      const { app, clock } = setup();
      const id = await app.task("batch.then.return", async (_a, j) => {
        await current().completeBatch(() => []);
        return { built: j.id };
      }).using(h().db).enqueue({});
      const summary = await run(app, clock);
      expect(summary.succeeded).toBe(1);
      expect(await job(id)).toMatchObject({ state: "succeeded", attempt: 1, result: { built: id } });
    });

    if (driver !== "neon-http") it("completeTx then return: the returned value is the result", async () => {
      const { app, clock } = setup();
      const id = await app.task("tx.then.return", async () => {
        await current().completeTx(async () => {});
        return ["a", 1];
      }).using(h().db).enqueue({});
      await run(app, clock);
      expect(await job(id)).toMatchObject({ state: "succeeded", result: ["a", 1] });
    });

    it("a value JSON cannot hold, or a throw after completion, leaves the job succeeded with a null result", async () => {
      const { app, clock } = setup();
      const odd = await app.task("odd.after", async () => { await current().completeBatch(() => []); return new Map(); }).using(h().db).enqueue({});
      const thrown = await app.task("throw.after", async () => { await current().completeBatch(() => []); throw new Error("late"); }).using(h().db).enqueue({});
      await run(app, clock);
      expect(await job(odd)).toMatchObject({ state: "succeeded", result: null, errors: [] });
      expect(await job(thrown)).toMatchObject({ state: "succeeded", result: null, errors: [] });
    });
  });

  describe("a declarative retry policy", () => {
    class VendorError extends Error {}
    const secondsUntil = (runAt: string, now: Date) => (new Date(runAt).getTime() - now.getTime()) / 1000;

    it("sets the attempt budget and the delays: wait, times backoff, at most maxWait; then the job fails", async () => {
      const { app, clock } = setup();
      const id = await app.task("vendor.fetch", {
        backoff: { maxAttempts: 4, wait: "2s", backoff: 2, maxWait: "5s", retryOn: [VendorError] },
      }, async () => { throw new VendorError("503"); }).using(h().db).enqueue({});
      const delays: number[] = [];
      for (let i = 0; i < 4; i++) {
        await run(app, clock);
        const row = await job(id);
        if (row.state === "queued") { delays.push(secondsUntil(row.run_at, clock.now())); clock.set(row.run_at); }
      }
      expect(delays).toEqual([2, 4, 5]);
      expect(await job(id)).toMatchObject({ state: "failed", attempt: 4 });
      expect((await h().rows(`select max_attempts from akadze.all_jobs where id = ${id}`))[0].max_attempts).toBe(4);
    });

    it("its error filter fails other errors at once, and composes with the task's retryOn (both must accept)", async () => {
      const { app, clock } = setup();
      const task = app.task("vendor.call", {
        args: v.object({ error: v.string() }), maxAttempts: 5,
        backoff: { wait: "1m", retryOn: [VendorError] },
        retryOn: (e) => !(e instanceof VendorError && e.message === "gone"),
      }, async ({ error }) => { throw error === "type" ? new TypeError("bug") : new VendorError(error); });
      const retried = await task.using(h().db).enqueue({ error: "503" });
      const notVendor = await task.using(h().db).enqueue({ error: "type" });
      const vetoed = await task.using(h().db).enqueue({ error: "gone" });
      await run(app, clock);
      const row = await job(retried);
      expect(row).toMatchObject({ state: "queued", attempt: 1 });
      expect(secondsUntil(row.run_at, clock.now())).toBe(60);
      expect(await job(notVendor)).toMatchObject({ state: "failed", attempt: 1 });
      expect(await job(vetoed)).toMatchObject({ state: "failed", attempt: 1 });
    });

    it("a bad policy is refused when the task is declared, naming the field", () => {
      const { app } = setup();
      expect(() => app.task("bad.policy", { backoff: { wait: "2s", backoff: 0 } }, async () => {}))
        .toThrow(/task bad.policy: invalid backoff policy: backoff must be at least 1/);
      expect(() => app.task("twice", { maxAttempts: 3, backoff: { maxAttempts: 5 } }, async () => {}))
        .toThrow(/maxAttempts is 3 but its backoff policy says 5/);
      expect(app.tasks.has("bad.policy")).toBe(false);
    });
  });

  describe("an opt-in bound on how long a job may be held back by its limit", () => {
    const MINUTE = 60_000;
    const vendor = (app: App, limitWait?: "10m") =>
      app.task("vendor.call", { args: v.object({ n: v.number() }), ...(limitWait ? { limitWait } : {}) }, async ({ n }) => n);

    it("a due job held back past its limitWait ends rate_limited: no attempt spent, seen by onTransition, the summary and listings", async () => {
      const { app, clock } = setup();
      const seen: Transition[] = [];
      app.hooks.onTransition((t) => { if (t.to === "rate_limited") seen.push(t); });
      await setLimit(h().db, "vendor", { maxStarts: 1, window: "1h" });
      const [first, second] = await vendor(app, "10m").using(h().db, { limitKey: "vendor" }).enqueueMany([{ n: 1 }, { n: 2 }]);
      expect((await run(app, clock)).succeeded).toBe(1);
      clock.advance(10 * MINUTE);
      const atBound = await run(app, clock); // exactly 10 minutes held back: not past the bound yet
      expect(atBound).toMatchObject({ claimed: 0, rateLimited: 0 });
      expect((await job(second)).state).toBe("queued");
      clock.advance(1);
      const past = await run(app, clock);
      expect(past).toMatchObject({ claimed: 0, rateLimited: 1 });
      const row = await job(second);
      expect(row).toMatchObject({ state: "rate_limited", attempt: 0, errors: [] });
      expect(new Date(row.finished_at).getTime()).toBe(clock.now().getTime());
      expect(seen).toEqual([{ jobId: second, task: "vendor.call", queue: "default", from: "queued", to: "rate_limited", attempt: 0 }]);
      expect((await job(first)).state).toBe("succeeded");
      expect((await listJobs(h().db, { state: "rate_limited" })).map((j) => j.id)).toEqual([second]);
      expect((await listQueues(h().db, { now: clock.now() }))[0]).toMatchObject({ queue: "default", rateLimited: 1 });
      const metrics = await renderMetrics(h().db, { now: clock.now() });
      expect(metrics).toContain('akadze_jobs{queue="default",task="vendor.call",state="rate_limited"} 1');
      expect(metrics).toContain('akadze_recent_finished_jobs{queue="default",task="vendor.call",state="rate_limited"} 1');
    });

    it("without limitWait a held-back job waits in queued, however long", async () => {
      const { app, clock } = setup();
      await setLimit(h().db, "vendor", { maxStarts: 1, window: "1d" });
      const [, second] = await vendor(app).using(h().db, { limitKey: "vendor" }).enqueueMany([{ n: 1 }, { n: 2 }]);
      await run(app, clock);
      clock.advance(12 * 60 * MINUTE);
      expect((await run(app, clock)).rateLimited).toBe(0);
      expect((await job(second)).state).toBe("queued");
    });

    it("a job whose key has room is claimed even long past its limitWait: only the limit's hold counts", async () => {
      const { app, clock } = setup();
      await setLimit(h().db, "vendor", { maxStarts: 5, window: "1m" });
      const id = await vendor(app, "10m").using(h().db, { limitKey: "vendor" }).enqueue({ n: 7 });
      clock.advance(60 * MINUTE); // no invocation ran for an hour
      expect(await run(app, clock)).toMatchObject({ succeeded: 1, rateLimited: 0 });
      expect(await job(id)).toMatchObject({ state: "succeeded", result: 7 });
    });

    it("a key whose maxRunning slots are all held ends its jobs held back past the bound; the enqueue option overrides the task's", async () => {
      const { app, clock } = setup();
      await setLimit(h().db, "vendor", { maxRunning: 1 });
      const holding = deferred();
      const hasStarted = deferred();
      app.task("vendor.hold", { timeout: "1d" }, async () => { hasStarted.resolve(); await holding.promise; });
      await app.taskByName("vendor.hold").using(h().db, { limitKey: "vendor" }).enqueue({});
      const waiting = await vendor(app, "10m").using(h().db, { limitKey: "vendor", limitWait: "1m" }).enqueue({ n: 1 });
      const first = run(app, clock, { budget: "2d", lease: "1h" }); // its lease outlives the minute the clock moves
      await hasStarted.promise;
      clock.advance(MINUTE + 1);
      expect(await run(app, clock)).toMatchObject({ claimed: 0, recovered: 0, rateLimited: 1 });
      holding.resolve();
      expect(await first).toMatchObject({ succeeded: 1 });
      expect((await job(waiting)).state).toBe("rate_limited");
    });

    it("a rate_limited job is pruned by retention with the succeeded and cancelled ones", async () => {
      const { app, clock } = setup();
      await setLimit(h().db, "vendor", { maxStarts: 1, window: "30d" });
      const [, held] = await vendor(app, "10m").using(h().db, { limitKey: "vendor" }).enqueueMany([{ n: 1 }, { n: 2 }]);
      await run(app, clock);
      clock.advance(11 * MINUTE);
      await run(app, clock);
      expect((await job(held)).state).toBe("rate_limited");
      clock.advance(8 * 24 * 60 * MINUTE); // past the default retention of 7 days
      await run(app, clock);
      expect(await h().rows("select state from akadze.all_jobs")).toEqual([]);
    });

    it("limitWait without a limitKey is refused, naming the field, and nothing is written", async () => {
      const { app } = setup();
      const error = await vendor(app).using(h().db, { limitWait: "5m" }).enqueue({ n: 1 }).catch((e) => e);
      expect(error).toBeInstanceOf(InvalidInput);
      expect(error.message).toContain("limitWait bounds the wait for a limit: give it with a limitKey");
      expect(await h().rows("select id from akadze.all_jobs")).toEqual([]);
    });
  });

  describe("messages", () => {
    it("ResultNotJson names a cycle and where it is, not 'a Object'", async () => {
      const { app, clock } = setup();
      const id = await app.task("loop", async () => { const o: any = { list: [] }; o.list.push(o); return o; }).using(h().db).enqueue({});
      await run(app, clock);
      const [entry] = (await job(id)).errors;
      expect(entry.kind).toBe("ResultNotJson");
      expect(entry.message).toBe("task loop returned a value that is not JSON: a cycle at .list[0] (an object that contains itself)");
    });

    it("enqueueMany with one uniqueKey for several jobs is refused as bad input, and nothing is written", async () => {
      const { app } = setup();
      const task = app.task("welcome", { args: v.object({ userId: v.number() }) }, async () => {});
      const error = await task.using(h().db, { uniqueKey: "welcome" }).enqueueMany([{ userId: 1 }, { userId: 2 }]).catch((e) => e);
      expect(error).toBeInstanceOf(InvalidInput);
      expect(error.message).toContain('uniqueKey "welcome" would be shared by all 2 jobs of this enqueueMany call');
      expect(error.message).not.toContain("already queued or running");
      expect(await h().rows("select id from akadze.all_jobs")).toEqual([]);
      expect(await task.using(h().db, { uniqueKey: "welcome" }).enqueueMany([{ userId: 1 }])).toHaveLength(1);
    });

    it("requeue clashing with an active job's uniqueKey names that key and leaves the job failed", async () => {
      const { app, clock } = setup();
      const task = app.task("report", { maxAttempts: 1 }, async () => { throw new Error("down"); });
      const first = await task.using(h().db, { uniqueKey: "report-7" }).enqueue({});
      await run(app, clock);
      expect((await job(first)).state).toBe("failed");
      await task.using(h().db, { uniqueKey: "report-7" }).enqueue({});
      const error = await requeue(h().db, first).catch((e) => e);
      expect(error).toBeInstanceOf(DuplicateJob);
      expect(error.uniqueKey).toBe("report-7");
      expect(error.message).toBe('a job with uniqueKey "report-7" is already queued or running');
      expect((await job(first)).state).toBe("failed");
    });
  });
});
