// Bulk cancel, requeue and replay by a selection (issue 39), and a workflow's cancel reaching its child jobs, on every driver.
import * as v from "valibot";
import { sql } from "drizzle-orm";
import { expect, it } from "vitest";
import {
  cancelJobs, createApp, DuplicateJob, getJob, InvalidInput, replayJob, replayJobs, requestCancel, requeueJobs, runOnce, type App, type JobSelection,
} from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";

forEachDriver((h, driver) => {
  const jobs = () => h().rows<{ id: number; state: string; cancel_requested: boolean }>(
    "select id, state, cancel_requested from akadze.all_jobs order by id");
  const stateOf = async (id: number) => (await jobs()).find((j) => j.id === id)?.state;
  const invoke = (app: App, clock: ManualClock, queues?: string[]) => runOnce(app, { db: h().db, now: clock.now, budget: "1h", ...(queues ? { queues } : {}) });

  /** Six queued jobs that differ in one field each from the first. */
  async function mixedQueue() {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const mail = app.task("mail.send", { args: v.object({ userId: v.number(), kind: v.optional(v.object({ urgent: v.boolean() })) }) }, async () => "sent");
    const other = app.task("report.build", async () => "built");
    const base = await mail.using(h().db).enqueue({ userId: 7, kind: { urgent: true } });
    const otherUser = await mail.using(h().db).enqueue({ userId: 8, kind: { urgent: true } });
    const otherQueue = await mail.using(h().db, { queue: "bulk" }).enqueue({ userId: 7 });
    const otherTask = await other.using(h().db).enqueue({});
    const fair = await mail.using(h().db, { fairKey: "tenant-1" }).enqueue({ userId: 7 });
    const old = await mail.using(h().db).enqueue({ userId: 7 });
    // Enqueued at 10:00 (old) and 11:30 (the others); ages are measured from 12:00.
    await h().db.execute(sql.raw(`update akadze.jobs set created_at = case when id = ${old} then '2026-06-01T10:00:00Z'::timestamptz
      else '2026-06-01T11:30:00Z'::timestamptz end`));
    return { app, clock, ids: { base, otherUser, otherQueue, otherTask, fair, old } };
  }

  it("each field of a selection takes exactly the jobs it names, and a dry run counts them changing nothing", async () => {
    const { ids } = await mixedQueue();
    const now = new Date("2026-06-01T12:00:00Z");
    type Name = keyof typeof ids;
    const cases: [JobSelection, Name[]][] = [
      [{ task: "mail.send" }, ["base", "otherUser", "otherQueue", "fair", "old"]],
      [{ task: "report.build" }, ["otherTask"]],
      [{ queue: "bulk" }, ["otherQueue"]],
      [{ fairKey: "tenant-1" }, ["fair"]],
      [{ args: { userId: 8 } }, ["otherUser"]],
      [{ args: { kind: { urgent: true } } }, ["base", "otherUser"]],
      [{ olderThan: "1h" }, ["old"]],
      [{ newerThan: "1h" }, ["base", "otherUser", "otherQueue", "otherTask", "fair"]],
      [{ olderThan: "10m", newerThan: "3h", task: "mail.send", args: { userId: 7 } }, ["base", "otherQueue", "fair", "old"]],
      [{ state: "running" }, []],
      [{ task: "mail.send", limit: 2 }, ["base", "otherUser"]],
    ];
    const before = await jobs();
    for (const [selection, expected] of cases) {
      expect(await cancelJobs(h().db, selection, { dryRun: true, now }), JSON.stringify(selection)).toBe(expected.length);
    }
    expect(await jobs()).toEqual(before);
    // For real, one selection at a time on a fresh queue: exactly the named jobs end cancelled, the others stay queued.
    for (const [selection, expected] of cases) {
      await h().reset();
      const { ids: fresh } = await mixedQueue();
      expect(await cancelJobs(h().db, selection, { now })).toBe(expected.length);
      const byState = (state: string) => (Object.keys(fresh) as Name[]).filter((name) => snapshot.find((j) => j.id === fresh[name])?.state === state);
      const snapshot = await jobs();
      expect(byState("cancelled"), JSON.stringify(selection)).toEqual(expected);
      expect(byState("queued")).toHaveLength(6 - expected.length);
    }
  });

  it("a bulk cancel asks a running job to stop once, and a second call finds nothing left to do", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const counts: number[] = [];
    const id = await app.task("slow", async (_a, job) => {
      // A row the heartbeat holds at that instant is skipped, not waited for: ask until the job is taken.
      let first = 0;
      for (let i = 0; i < 100 && first === 0; i++) first = await cancelJobs(h().db, { task: "slow", state: "running" });
      counts.push(first, await cancelJobs(h().db, { task: "slow" }));
      await new Promise((resolve) => { if (job.signal.aborted) resolve(null); else job.signal.addEventListener("abort", resolve); });
      throw new Error("stopped");
    }).using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now, heartbeat: 20 });
    expect(counts).toEqual([1, 0]);
    expect(await stateOf(id)).toBe("cancelled");
  });

  it("requeueJobs moves only the selected failed jobs back, keeping attempt, errors and args, each with one more run", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let fail = true;
    const flaky = app.task("flaky", { maxAttempts: 1, args: v.object({ n: v.number() }) }, async ({ n }) => { if (fail) throw new Error(`no ${n}`); return n; });
    const [one, two, three] = await flaky.using(h().db).enqueueMany([{ n: 1 }, { n: 2 }, { n: 3 }]);
    const keyed = await flaky.using(h().db, { uniqueKey: "k" }).enqueue({ n: 4 });
    await invoke(app, clock);
    await flaky.using(h().db, { uniqueKey: "k" }).enqueue({ n: 5 }); // holds the failed job's key
    const before = await jobs();
    expect(await requeueJobs(h().db, { task: "flaky" }, { dryRun: true })).toBe(3); // not the keyed one: its key is taken
    expect(await jobs()).toEqual(before);
    expect(await requeueJobs(h().db, { task: "flaky", args: { n: 2 } }, { app })).toBe(1);
    expect(await h().rows(`select state, attempt, max_attempts, args, jsonb_array_length(errors) as errors from akadze.all_jobs where id = ${two}`))
      .toEqual([{ state: "queued", attempt: 1, max_attempts: 2, args: { n: 2 }, errors: 1 }]);
    expect([await stateOf(one), await stateOf(three), await stateOf(keyed)]).toEqual(["failed", "failed", "failed"]);
    fail = false;
    await invoke(app, clock);
    expect((await getJob(h().db, two, flaky))?.result).toBe(2);
  });

  it("replayJob runs a finished job again as a new job that records its origin, with new args checked by the task's schema", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const double = app.task("double", { args: v.object({ n: v.number() }), maxAttempts: 1 }, async ({ n }) => {
      if (n < 0) throw new Error("negative");
      return n * 2;
    });
    const [ok, bad] = await double.using(h().db, { priority: 3 }).enqueueMany([{ n: 2 }, { n: -1 }]);
    await invoke(app, clock);
    const before = await jobs();
    await expect(replayJob(h().db, bad, { args: { n: "ten" }, app })).rejects.toThrow(InvalidInput);
    await expect(replayJob(h().db, bad, { args: { n: 1n } })).rejects.toThrow(InvalidInput);
    await expect(replayJob(h().db, bad, { arg: { n: 1 } } as never)).rejects.toThrow(InvalidInput);
    expect(await jobs()).toEqual(before);

    const again = await replayJob(h().db, bad, { args: { n: 5 }, app });
    const same = await replayJob(h().db, ok, { app });
    expect(again).toBeGreaterThan(bad);
    expect(await getJob(h().db, again!)).toMatchObject({ task: "double", state: "queued", attempt: 0, args: { n: 5 }, priority: 3, errors: [], replayOf: bad });
    expect(await getJob(h().db, same!)).toMatchObject({ args: { n: 2 }, replayOf: ok });
    expect(await getJob(h().db, ok)).toMatchObject({ state: "succeeded", result: 4, replayOf: null });
    expect(await getJob(h().db, bad)).toMatchObject({ state: "failed" });
    await invoke(app, clock);
    expect((await getJob(h().db, again!, double))?.result).toBe(10);
    expect(await replayJob(h().db, 987654)).toBeNull();
    const queued = await double.using(h().db).enqueue({ n: 1 });
    expect(await replayJob(h().db, queued)).toBeNull(); // only finished jobs are replayed
  });

  it("a replay whose unique key an active job holds is refused, and replayJobs leaves it out", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const task = app.task("keyed", async () => 1);
    const done = await task.using(h().db, { uniqueKey: "daily" }).enqueue({});
    await invoke(app, clock);
    await task.using(h().db, { uniqueKey: "daily" }).enqueue({});
    await expect(replayJob(h().db, done)).rejects.toThrow(DuplicateJob);
    expect(await replayJobs(h().db, { task: "keyed" })).toBe(0);
  });

  it("replayJobs replays the selected succeeded, failed and cancelled jobs, each recording its origin", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const task = app.task("t", { maxAttempts: 1, args: v.object({ ok: v.boolean() }) }, async ({ ok }) => { if (!ok) throw new Error("no"); return ok; });
    const [good, bad, cancelled] = await task.using(h().db).enqueueMany([{ ok: true }, { ok: false }, { ok: true }]);
    await requestCancel(h().db, cancelled);
    await invoke(app, clock);
    await task.using(h().db).enqueue({ ok: true }); // queued: never replayed
    const before = await jobs();
    expect(await replayJobs(h().db, { task: "t" }, { dryRun: true })).toBe(3);
    expect(await replayJobs(h().db, { task: "t", state: ["failed", "cancelled"] }, { dryRun: true })).toBe(2);
    expect(await jobs()).toEqual(before);
    expect(await replayJobs(h().db, { task: "t", state: ["failed", "cancelled"] }, { app })).toBe(2);
    expect(await h().rows("select replay_of from akadze.replays order by replay_of")).toEqual([{ replay_of: bad }, { replay_of: cancelled }]);
    expect(await stateOf(good)).toBe("succeeded");
    expect((await jobs()).filter((j) => j.state === "queued")).toHaveLength(3);
  });

  it("a replay's origin is kept while its job is, and goes with it", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const done = await app.task("t", async () => 1).using(h().db).enqueue({});
    await invoke(app, clock);
    const again = (await replayJob(h().db, done, { app }))!;
    expect(await h().rows("select akadze.prune_orphan_replays(100) as n")).toEqual([{ n: 0 }]);
    await h().db.execute(sql.raw(`delete from akadze.jobs where id = ${again}`)); // as retention does once it finished
    expect(await h().rows("select akadze.prune_orphan_replays(100) as n")).toEqual([{ n: 1 }]);
    expect(await h().rows("select * from akadze.replays")).toEqual([]);
  });

  it("cancelling a workflow cancels its child jobs and theirs, by requestCancel and by cancelJobs", async () => {
    for (const cancel of ["requestCancel", "cancelJobs"] as const) {
      await h().reset();
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      const seen: string[] = [];
      const leaf = app.task("leaf", { queue: "leaves", args: v.object({ n: v.number() }) }, async ({ n }) => n);
      const mid = app.workflow("mid", { queue: "mids" }, async (_a, step) => step.runJobs("leaves", leaf, [{ n: 1 }, { n: 2 }]));
      const parent = await app.workflow("top", { queue: "tops" }, async (_a, step) => {
        await step.runJobs("kids", leaf, [{ n: 3 }]);
        return step.invoke("mid", mid, {});
      }).using(h().db).enqueue({});
      const unrelated = await leaf.using(h().db).enqueue({ n: 9 });
      await invoke(app, clock, ["tops"]); // the parent starts a leaf and parks
      clock.advance(10_000);
      expect(await h().rows("select task from akadze.jobs where state = 'queued' order by id")).toEqual([{ task: "top" }, { task: "leaf" }, { task: "leaf" }]);
      await invoke(app, clock, ["leaves"]); // its leaf (and the unrelated one) run
      clock.advance(10_000);
      await invoke(app, clock, ["tops"]); // it invokes mid and parks
      await invoke(app, clock, ["mids"]); // mid starts two leaves and parks
      const queuedBefore = await h().rows<{ id: number; task: string }>("select id, task from akadze.jobs where state = 'queued' order by id");
      expect(queuedBefore.map((j) => j.task)).toEqual(["top", "mid", "leaf", "leaf"]);
      app.hooks.onTransition((t) => { seen.push(`${t.task}:${t.from}->${t.to}`); });
      if (cancel === "requestCancel") expect(await requestCancel(h().db, parent, app)).toBe(true);
      else {
        expect(await cancelJobs(h().db, { task: "top" }, { dryRun: true })).toBe(4);
        expect(await cancelJobs(h().db, { task: "top" }, { app })).toBe(4);
      }
      expect(await h().rows("select count(*)::int as n from akadze.jobs")).toEqual([{ n: 0 }]);
      for (const { id } of queuedBefore) expect(await stateOf(id)).toBe("cancelled");
      expect(await stateOf(unrelated)).toBe("succeeded");
      expect(seen.sort()).toEqual(["leaf:queued->cancelled", "leaf:queued->cancelled", "mid:queued->cancelled", "top:queued->cancelled"]);
    }
  });

  it("a bad selection or option is a clear InvalidInput and changes nothing", async () => {
    await mixedQueue();
    const before = await jobs();
    const bad: [() => Promise<unknown>, RegExp][] = [
      [() => cancelJobs(h().db, {}), /at least one of task/],
      [() => cancelJobs(h().db, { limit: 5 }), /at least one of task/],
      [() => cancelJobs(h().db, { state: "failed" }), /acts on queued, running jobs, not failed/],
      [() => cancelJobs(h().db, { state: "paused" as never }), /state must be one of/],
      [() => cancelJobs(h().db, { task: "" }), /task/],
      [() => cancelJobs(h().db, { task: "mail.send", limit: 10_001 }), /limit must be at most 10000/],
      [() => cancelJobs(h().db, { task: "mail.send", args: [1] as never }), /args must be a JSON object/],
      [() => cancelJobs(h().db, { task: "mail.send", args: { at: new Date() } }), /args\.at/],
      [() => cancelJobs(h().db, { olderThan: "1h", newerThan: "10m" }), /olderThan must be less than newerThan/],
      [() => cancelJobs(h().db, { olderThan: "soon" as never }), /Invalid duration/],
      [() => cancelJobs(h().db, { task: "mail.send", colour: "red" } as never), /colour/],
      [() => cancelJobs(h().db, { task: "mail.send" }, { dryRun: "yes" as never }), /dryRun must be true or false/],
      [() => requeueJobs(h().db, { state: "queued" }), /acts on failed jobs, not queued/],
      [() => replayJobs(h().db, { state: ["succeeded", "running"] }), /not running/],
      [() => replayJob(h().db, 0), /job id must be positive/],
    ];
    for (const [call, message] of bad) {
      const error = await call().then(() => null, (e: unknown) => e);
      expect(error, String(message)).toBeInstanceOf(InvalidInput);
      expect((error as Error).message).toMatch(message);
    }
    expect(await jobs()).toEqual(before);
    expect(driver).toBeTruthy();
  });
});
