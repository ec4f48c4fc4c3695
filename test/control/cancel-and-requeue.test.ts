// Cancel and requeue (SPEC §2), on every driver: a job cancelled or expired before it starts never runs, one cancelled
// while running ends cancelled with no attempt spent unless its body returned a value; requeue gives a failed job one
// more run keeping its attempt, errors and args; finished and unknown jobs are left alone; onTransition sees each change.
import { expect, it } from "vitest";
import { createApp, requestCancel, requeue, Retry, Snooze, runOnce, InvalidInput, type Transition } from "../../src/index.js";
import { memoryOf } from "../../src/runtime/process-memory.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { abortedOf } from "../support/deferred.js";

forEachDriver((h, driver) => {
  const state = async (id: number) => (await h().rows(`select state, attempt, max_attempts, errors, result, cancel_requested from akadze.all_jobs where id = ${id}`))[0];

  it("a job cancelled before it starts becomes cancelled without running", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let ran = false;
    const id = await app.task("t", async () => { ran = true; }).using(h().db).enqueue({});
    expect(await requestCancel(h().db, id)).toBe(true);
    expect(await state(id)).toMatchObject({ state: "cancelled" });
    await runOnce(app, { db: h().db, now: clock.now });
    expect(ran).toBe(false);
    expect(await state(id)).toMatchObject({ state: "cancelled", attempt: 0 });
  });

  it("a job past expiresAt before it starts becomes cancelled without running", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let ran = false;
    const id = await app.task("t", async () => { ran = true; }).using(h().db, { delay: "1m", expiresAt: new Date(clock.now().getTime() + 30_000) }).enqueue({});
    clock.advance(45_000);
    const summary = await runOnce(app, { db: h().db, now: clock.now });
    expect(summary).toMatchObject({ claimed: 0, cancelled: 1 });
    expect(ran).toBe(false);
    expect(await state(id)).toMatchObject({ state: "cancelled", attempt: 0 });
  });

  it("a process whose claims saw no job to cancel leaves out the stop CTEs, and still never runs one that must be cancelled", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ran: number[] = [];
    const task = app.task("t", async (_args, job) => { ran.push(job.id); });
    // A claim of an empty queue reports that no queued job must be cancelled: the next claims go without those CTEs.
    await runOnce(app, { db: h().db, now: clock.now });
    expect(memoryOf(app).stops).toBe(false);
    const due = await task.using(h().db, { expiresAt: new Date(clock.now().getTime() + 30_000) }).enqueue({});
    const later = await task.using(h().db, { delay: "1m", expiresAt: new Date(clock.now().getTime() + 30_000) }).enqueue({});
    const fine = await task.using(h().db).enqueue({});
    clock.advance(45_000);
    // Its first claim leaves both expired jobs queued (the due one is a candidate it must not take) and reports
    // them; the next claim, with the stop CTEs, cancels them.
    const summary = await runOnce(app, { db: h().db, now: clock.now });
    expect(summary).toMatchObject({ claimed: 1, succeeded: 1, cancelled: 2 });
    expect(ran).toEqual([fine]);
    expect(await state(due)).toMatchObject({ state: "cancelled", attempt: 0 });
    expect(await state(later)).toMatchObject({ state: "cancelled", attempt: 0 });
    // The claim that cancelled them still saw them queued (its snapshot); the next one finds none and drops the CTEs again.
    await runOnce(app, { db: h().db, now: clock.now });
    expect(memoryOf(app).stops).toBe(false);
  });

  it("requestCancel returns false and changes nothing for finished jobs and unknown ids", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const id = await app.task("t", async () => 1).using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now });
    expect(await requestCancel(h().db, id)).toBe(false);
    expect(await state(id)).toMatchObject({ state: "succeeded", cancel_requested: false });
    expect(await requestCancel(h().db, 987654)).toBe(false);
    await expect(requestCancel(h().db, "7" as any)).rejects.toThrow(InvalidInput);
  });

  for (const [label, body, expected] of [
    ["returns a value: succeeded with it", async () => "finished anyway", { state: "succeeded", attempt: 1, result: "finished anyway" }],
    ["throws: cancelled, no attempt spent", async () => { throw new Error("stopping"); }, { state: "cancelled", attempt: 0 }],
    ["throws Retry: cancelled, no attempt spent", async () => { throw new Retry("1s"); }, { state: "cancelled", attempt: 0 }],
    ["throws Snooze: cancelled", async () => { throw new Snooze("1s"); }, { state: "cancelled", attempt: 0 }],
    ["returns non-JSON: cancelled, no attempt spent", async () => new Date(), { state: "cancelled", attempt: 0 }],
  ] as const) {
    it(`cancel during a run, then the body ${label}`, async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      let signalled = false;
      const id = await app.task("t", { maxAttempts: 2 }, async (_a, job) => {
        await requestCancel(h().db, job.id);
        await abortedOf(job.signal); // the heartbeat may have seen the request before this line
        signalled = true;
        return body();
      }).using(h().db).enqueue({});
      await runOnce(app, { db: h().db, now: clock.now, heartbeat: 20 });
      expect(signalled).toBe(true); // the heartbeat saw the request and aborted job.signal
      expect(await state(id)).toMatchObject(expected);
    });
  }

  it("a cancel request seen only at completion still cancels a body that threw", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const id = await app.task("t", async (_a, job) => {
      await requestCancel(h().db, job.id);
      throw new Error("failed after the request");
    }).using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now });
    expect(await state(id)).toMatchObject({ state: "cancelled", attempt: 0, errors: [] });
  });

  it("requeue moves a failed job back to queued, keeping attempt, errors and args, and it gets one more run", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let runs = 0;
    const id = await app.task("flaky", { maxAttempts: 1 }, async (args: any) => {
      if (++runs === 1) throw new Error("first run fails");
      return args;
    }).using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now });
    expect(await state(id)).toMatchObject({ state: "failed", attempt: 1, max_attempts: 1 });
    expect(await requeue(h().db, id)).toBe(true);
    const requeued = await state(id);
    expect(requeued).toMatchObject({ state: "queued", attempt: 1, max_attempts: 2 });
    expect(requeued.errors).toHaveLength(1);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(await state(id)).toMatchObject({ state: "succeeded", attempt: 2 });
  });

  it("requeue returns false for jobs that are not failed and for unknown ids", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const id = await app.task("t", async () => 1).using(h().db).enqueue({});
    expect(await requeue(h().db, id)).toBe(false);
    expect(await requeue(h().db, 424242)).toBe(false);
    expect(await state(id)).toMatchObject({ state: "queued", attempt: 0 });
  });

  // neon-http has no interactive transactions to roll back.
  if (driver !== "neon-http") it("requeue runs in the caller's transaction", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const id = await app.task("t", { maxAttempts: 1 }, async () => { throw new Error("x"); }).using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now });
    await expect(h().db.transaction(async (tx) => {
      await requeue(tx as any, id);
      throw new Error("rollback");
    })).rejects.toThrow("rollback");
    expect(await state(id)).toMatchObject({ state: "failed" });
  });

  it("requestCancel and requeue given the app report their transitions to its onTransition hooks", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const seen: Pick<Transition, "jobId" | "task" | "queue" | "from" | "to" | "attempt">[] = [];
    const task = app.task("t", { maxAttempts: 1, queue: "q" }, async () => { throw new Error("x"); });
    const [queued, failing] = await task.using(h().db).enqueueMany([{}, {}]);
    expect(await requestCancel(h().db, queued)).toBe(true); // the cancel of the first: no app, no hooks yet
    await runOnce(app, { db: h().db, now: clock.now });
    app.hooks.onTransition(({ jobId, task, queue, from, to, attempt }) => { seen.push({ jobId, task, queue, from, to, attempt }); });
    expect(await requeue(h().db, failing, app)).toBe(true);
    expect(await requestCancel(h().db, failing, app)).toBe(true);
    expect(seen).toEqual([
      { jobId: failing, task: "t", queue: "q", from: "failed", to: "queued", attempt: 1 },
      { jobId: failing, task: "t", queue: "q", from: "queued", to: "cancelled", attempt: 1 },
    ]);
    // Nothing changed, nothing reported: a finished job, an unknown id.
    expect(await requestCancel(h().db, failing, app)).toBe(false);
    expect(await requeue(h().db, 424242, app)).toBe(false);
    expect(seen).toHaveLength(2);
  });

  it("a cancel request on a running job changes no state, so the hooks see no transition until it ends", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const seen: string[] = [];
    let marked: boolean | undefined;
    const id = await app.task("t", async (_a, job) => {
      marked = await requestCancel(h().db, job.id, app);
      seen.push("body returned");
      return "done";
    }).using(h().db).enqueue({});
    app.hooks.onTransition((t) => { seen.push(`${t.from} -> ${t.to}`); });
    await runOnce(app, { db: h().db, now: clock.now });
    expect(marked).toBe(true);
    expect(seen).toEqual(["queued -> running", "body returned", "running -> succeeded"]);
    expect(await state(id)).toMatchObject({ state: "succeeded", cancel_requested: true });
  });

  // On neon-http the change has committed when the hook runs (no interactive transactions).
  if (driver !== "neon-http") it("a throwing hook undoes the cancel or requeue it was told of, and the caller gets its error", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const [queued, failing] = await app.task("t", { maxAttempts: 1 }, async () => { throw new Error("x"); }).using(h().db).enqueueMany([{}, {}]);
    await requestCancel(h().db, queued);
    await runOnce(app, { db: h().db, now: clock.now });
    app.hooks.onTransition(() => { throw new Error("alerting is down"); });
    await expect(requeue(h().db, failing, app)).rejects.toThrow("alerting is down");
    expect(await state(failing)).toMatchObject({ state: "failed" });
  });
});

