// Transition hooks get a deadline (issue 21, item 2): an onTransition hook that never settles (an alert call
// with no timeout) costs its statement at most the app's transitionHookTimeout. The statement then commits
// without it, so its transaction does not sit "idle in transaction" holding the jobs' row locks, the jobs it
// moved are recorded, and the invocation returns.
import { expect, it } from "vitest";
import * as v from "valibot";
import { createApp, requestCancel, runOnce } from "../src/index.js";
import { forEachDriver } from "./support/drivers.js";
import { ManualClock } from "./support/clock.js";

/** The promise, or a rejection after `ms` (what the test could wait at most). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} had not returned after ${ms} ms`)), ms); })])
    .finally(() => clearTimeout(timer));
}

forEachDriver((h) => {
  it("records the 40 jobs of a settle whose hook never settles, and the invocation returns", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now, transitionHookTimeout: "300ms" });
    const task = app.task("t", { args: v.object({}) }, async () => "done");
    const calls: string[] = [];
    app.hooks.onTransition(async (t) => {
      calls.push(t.to);
      if (t.to === "succeeded") await new Promise(() => {}); // an alert call that never answers
    });
    await task.using(h().db).enqueueMany(Array.from({ length: 40 }, () => ({})));
    const summary = await within(runOnce(app, { db: h().db, now: clock.now, slots: 40, batchSize: 40, budget: "2s" }), 10_000, "runOnce");
    expect(summary.succeeded).toBe(40);
    const jobs = await h().rows<{ state: string; errors: { kind: string; message: string }[] }>("select state, errors from akadze.all_jobs order by id");
    expect(jobs.map((j) => j.state)).toEqual(Array(40).fill("succeeded"));
    // In each settle statement the first call timed out and the calls after it were not made once the
    // statement's deadline had passed (the 40 may be settled by more than one statement).
    const kinds = jobs.flatMap((j) => j.errors.map((e) => e.kind));
    expect(kinds).toEqual(Array(40).fill("TransitionHookFailed"));
    expect(jobs[0]!.errors[0]!.message).toMatch(/did not settle within the 300 ms|was not called/);
    expect(calls.filter((c) => c === "succeeded").length).toBeGreaterThanOrEqual(1);
    expect(calls.filter((c) => c === "succeeded").length).toBeLessThanOrEqual(summary.roundTrips);
    expect(calls.filter((c) => c === "succeeded").length).toBeLessThan(40);
    // Nothing is left holding the jobs' rows.
    if (h().name === "node-postgres") {
      const idle = await h().rows("select pid from pg_stat_activity where datname = current_database() and state = 'idle in transaction'");
      expect(idle).toEqual([]);
    }
  });

  it("a hook that never settles does not carry the invocation past its budget, whatever the hook timeout", async () => {
    const clock = new ManualClock();
    // A timeout far beyond what the test waits: only the budget can end the hooks' wait.
    const app = createApp({ clock: clock.now, transitionHookTimeout: "10m" });
    const task = app.task("t", { args: v.object({}) }, async () => { clock.advance(1000); }); // each job takes 1 s of the clock
    app.hooks.onTransition(async (t) => { if (t.to === "succeeded") await new Promise(() => {}); });
    await task.using(h().db).enqueueMany(Array.from({ length: 4 }, () => ({})));
    const summary = await within(runOnce(app, { db: h().db, now: clock.now, slots: 1, batchSize: 1, budget: "2s" }), 30_000, "runOnce");
    expect(summary.succeeded).toBeGreaterThanOrEqual(1);
    const jobs = await h().rows<{ state: string; errors: { kind: string; message: string }[] }>("select state, errors from akadze.all_jobs where state = 'succeeded'");
    expect(jobs.flatMap((j) => j.errors.map((e) => e.kind))).toEqual(Array(jobs.length).fill("TransitionHookFailed"));
    expect(jobs[0]!.errors[0]!.message).toMatch(/did not settle within the \d+ ms .*budget|was not called/);
  });

  it("a hook that rejects after its deadline leaves no promise rejection unhandled, even for a moment", async () => {
    const events: string[] = [];
    const unhandled = (reason: unknown) => { events.push(`unhandledRejection: ${String(reason)}`); };
    const handledLate = () => { events.push("rejectionHandled"); };
    process.on("unhandledRejection", unhandled);
    process.on("rejectionHandled", handledLate);
    try {
      const app = createApp({ transitionHookTimeout: "100ms" });
      const task = app.task("t", { args: v.object({}) }, async () => "done");
      let rejected!: () => void;
      const late = new Promise<void>((resolve) => { rejected = resolve; });
      app.hooks.onTransition(async (t) => {
        if (t.to !== "succeeded") return;
        await new Promise((resolve) => setTimeout(resolve, 300)); // past the statement's deadline
        setTimeout(rejected, 50); // a moment after the rejection below, for Node to report it if unhandled
        throw new Error("the alert service answered late, and badly");
      });
      await task.using(h().db).enqueue({});
      expect((await within(runOnce(app, { db: h().db, budget: "5s" }), 10_000, "runOnce")).succeeded).toBe(1);
      await within(late, 10_000, "the late rejection");
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off("unhandledRejection", unhandled);
      process.off("rejectionHandled", handledLate);
    }
    expect(events).toEqual([]);
  });

  it("a control operation's hook past the deadline rolls its change back with a HookTimeout", async () => {
    const app = createApp({ transitionHookTimeout: "200ms" });
    const task = app.task("t", { args: v.object({}) }, async () => "done");
    const [id] = await task.using(h().db).enqueueMany([{}]);
    app.hooks.onTransition(() => new Promise(() => {}));
    const outcome = await within(requestCancel(h().db, id!, app).then(() => "returned", (e: Error) => e.name), 10_000, "requestCancel");
    if (h().name === "neon-http") return; // committed before the hooks run: the caller still hears of the timeout
    expect(outcome).toBe("HookTimeout");
    expect((await h().rows("select state from akadze.all_jobs"))[0].state).toBe("queued");
  });
}, ["node-postgres", "neon-http"]);
