// Batch tasks (issue 40, item 4): the handler gets up to maxBatch started jobs at once (waiting at most maxWait
// for them) and answers each job's outcome; each job keeps its own attempts, retries, timeout and history.
import { expect, it } from "vitest";
import * as v from "valibot";
import { sql } from "drizzle-orm";
import { BatchOutcomeMissing, Cancel, createApp, current, Fail, Snooze, InvalidInput, runOnce, runWorker, type BatchOutcomes } from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { outcomesOf } from "../../src/app/batch.js";
import { testApp } from "../../src/testing/index.js";
import { waitFor, within } from "../support/wait-for.js";

const N = v.object({ n: v.number() });
type Row = { n: number; state: string; attempt: number; result: unknown; kinds: string[] };

function batchApp(options: { maxBatch: number; maxWait?: "1h" | "5s"; maxAttempts?: number },
  answer: (jobs: { id: number; n: number; attempt: number }[]) => BatchOutcomes | Promise<BatchOutcomes>) {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  const calls: number[][] = [];
  const task = app.batchTask("numbers.double", { args: N, ...options }, (jobs) => {
    calls.push(jobs.map((job) => job.args.n));
    return answer(jobs.map((job) => ({ id: job.id, n: job.args.n, attempt: job.attempt })));
  });
  return { clock, app, task, calls };
}

const doubled = (jobs: { n: number }[]) => jobs.map((job) => ({ doubled: job.n * 2 }));

forEachDriver((h) => {
  const jobs = (): Promise<Row[]> => h().rows(`select (args->>'n')::int as n, state, attempt, result,
    array(select e->>'kind' from jsonb_array_elements(errors) e) as kinds from akadze.all_jobs order by id`);

  it("25 jobs with maxBatch 10 run in handler calls of at most 10, each job succeeding with its own result", async () => {
    const { clock, app, task, calls } = batchApp({ maxBatch: 10 }, doubled);
    await task.using(h().db).enqueueMany(Array.from({ length: 25 }, (_, n) => ({ n })));
    const summary = await runOnce(app, { db: h().db, now: clock.now, slots: 2 });
    expect(summary).toMatchObject({ claimed: 25, succeeded: 25, retried: 0, failed: 0 });
    // Two slots: the batch waits (within maxWait) for the jobs the invocation holds to start and join it.
    expect(calls.map((c) => c.length)).toEqual([10, 10, 5]);
    expect(calls.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, n) => n));
    expect(await jobs()).toEqual(Array.from({ length: 25 }, (_, n) => ({ n, state: "succeeded", attempt: 1, result: { doubled: n * 2 }, kinds: [] })));
  });

  it("an error answered for one job retries that job alone, on its own attempts", async () => {
    const { clock, app, task, calls } = batchApp({ maxBatch: 10 }, (js) => js.map((job) => job.n === 1 && job.attempt === 1 ? new Error("no mailbox") : { doubled: job.n * 2 }));
    await task.using(h().db).enqueueMany([{ n: 0 }, { n: 1 }, { n: 2 }]);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 2, retried: 1 });
    expect(calls).toEqual([[0, 1, 2]]);
    expect((await jobs())[1]).toMatchObject({ n: 1, state: "queued", attempt: 1, result: null, kinds: ["Error"] });
    clock.advance(60_000);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 1, retried: 0 });
    expect(calls).toEqual([[0, 1, 2], [1]]);
    expect((await jobs()).map((j) => [j.n, j.state, j.attempt, j.result])).toEqual([
      [0, "succeeded", 1, { doubled: 0 }], [1, "succeeded", 2, { doubled: 2 }], [2, "succeeded", 1, { doubled: 4 }]]);
  });

  it("a handler that throws spends an attempt of every job of its batch, each retried or failed by its own budget", async () => {
    const { clock, app, task, calls } = batchApp({ maxBatch: 10, maxAttempts: 2 }, () => { throw new Error("vendor down"); });
    await task.using(h().db).enqueue({ n: 0 });
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ retried: 1 });
    await task.using(h().db).enqueueMany([{ n: 1 }, { n: 2 }]);
    clock.advance(60_000);
    // Job 0 is on its last attempt: it fails; the two others retry.
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ failed: 1, retried: 2 });
    expect(calls.map((c) => [...c].sort())).toEqual([[0], [0, 1, 2]]);
    expect((await jobs()).map((j) => [j.n, j.state, j.attempt, j.kinds])).toEqual([
      [0, "failed", 2, ["Error", "Error"]], [1, "queued", 1, ["Error"]], [2, "queued", 1, ["Error"]]]);
  });

  it("a short answer fails only the jobs it leaves out; a Map answers by job id", async () => {
    const { clock, app, task } = batchApp({ maxBatch: 10, maxAttempts: 1 }, (js) => js[0].n === 0
      ? doubled(js).slice(0, 2)
      : new Map(js.filter((job) => job.n !== 4).map((job) => [job.id, { doubled: job.n * 2 }])));
    await task.using(h().db).enqueueMany([{ n: 0 }, { n: 1 }, { n: 2 }]);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 2, failed: 1 });
    await task.using(h().db).enqueueMany([{ n: 3 }, { n: 4 }, { n: 5 }]);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 2, failed: 1 });
    expect((await jobs()).map((j) => [j.n, j.state, j.kinds])).toEqual([
      [0, "succeeded", []], [1, "succeeded", []], [2, "failed", ["BatchOutcomeMissing"]],
      [3, "succeeded", []], [4, "failed", ["BatchOutcomeMissing"]], [5, "succeeded", []]]);
  });

  it("an answer that cannot be matched to the jobs, or a result that is not JSON, is an error of the jobs it touches", async () => {
    let answer: unknown = [1, 2, 3, 4];
    const { clock, app, task } = batchApp({ maxBatch: 10, maxAttempts: 1 }, () => answer as BatchOutcomes);
    await task.using(h().db).enqueueMany([{ n: 0 }, { n: 1 }]);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ failed: 2 });
    answer = [new Date(0), new Fail("bad address")];
    await task.using(h().db).enqueueMany([{ n: 2 }, { n: 3 }]);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ failed: 2 });
    answer = undefined;
    await task.using(h().db).enqueueMany([{ n: 4 }]);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 1 });
    answer = [new Cancel(), new Snooze("1m")];
    await task.using(h().db).enqueueMany([{ n: 5 }, { n: 6 }]);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ cancelled: 1, snoozed: 1 });
    expect((await jobs()).map((j) => [j.n, j.state, j.kinds, j.result])).toEqual([
      [0, "failed", ["BatchOutcomeMissing"], null], [1, "failed", ["BatchOutcomeMissing"], null],
      [2, "failed", ["ResultNotJson"], null], [3, "failed", ["Fail"], null], [4, "succeeded", [], null],
      [5, "cancelled", [], null], [6, "queued", [], null]]); // a snooze spends no attempt and leaves no error
  });

  it("an invocation runs fewer than maxBatch due jobs at once, without waiting out maxWait for more", async () => {
    const { clock, app, task, calls } = batchApp({ maxBatch: 10, maxWait: "1h" }, doubled);
    await task.using(h().db).enqueueMany([{ n: 0 }, { n: 1 }, { n: 2 }]);
    // The clock does not move: the invocation claims no more, so the batch is called with what it has.
    expect(await within(runOnce(app, { db: h().db, now: clock.now }), 20_000, "the invocation")).toMatchObject({ succeeded: 3 });
    expect(calls).toEqual([[0, 1, 2]]);
  });

  it("a worker's batch waits for more jobs until maxWait has passed on its clock", async () => {
    const { clock, app, task, calls } = batchApp({ maxBatch: 10, maxWait: "5s" }, doubled);
    let entered = 0;
    app.hooks.beforeRun(() => { entered++; });
    await task.using(h().db).enqueueMany([{ n: 0 }, { n: 1 }]);
    const stop = new AbortController();
    const worker = runWorker(app, { db: h().db, now: clock.now, slots: 2, signal: stop.signal });
    try {
      await waitFor(() => entered === 2, "both jobs to start");
      await task.using(h().db).enqueue({ n: 2 });
      await waitFor(() => entered === 3, "the third job to join");
      // A round trip later the batch still waits: the worker's clock has not moved.
      expect((await jobs()).map((j) => j.state)).toEqual(["running", "running", "running"]);
      expect(calls).toEqual([]);
      clock.advance(5_000);
      await waitFor(() => calls.length === 1, "the batch's call once maxWait passed");
      expect(calls).toEqual([[0, 1, 2]]);
      await waitFor(async () => (await jobs()).every((j) => j.state === "succeeded"), "the jobs' completion");
    } finally {
      stop.abort();
      await worker;
    }
  });

  it("a worker told to stop calls its waiting batch at once, and its jobs finish", async () => {
    const { clock, app, task, calls } = batchApp({ maxBatch: 10, maxWait: "1h" }, doubled);
    let entered = 0;
    app.hooks.beforeRun(() => { entered++; });
    await task.using(h().db).enqueueMany([{ n: 0 }, { n: 1 }]);
    const stop = new AbortController();
    const worker = runWorker(app, { db: h().db, now: clock.now, slots: 2, signal: stop.signal });
    await waitFor(() => entered === 2, "both jobs to start");
    expect(calls).toEqual([]);
    stop.abort();
    expect(await within(worker, 20_000, "the worker's end")).toMatchObject({ succeeded: 2, released: 0 });
    expect(calls).toEqual([[0, 1]]);
    expect((await jobs()).map((j) => j.state)).toEqual(["succeeded", "succeeded"]);
  });

  it("a batch holds one slot however many jobs it gathers, until its call ends, and its handler has no current() job", async () => {
    let sawCurrent = true;
    let active = 0;
    let mostActive = 0;
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const calls: number[] = [];
    const task = app.batchTask("numbers.double", { args: N, maxBatch: 10 }, async (js) => {
      mostActive = Math.max(mostActive, ++active);
      calls.push(js.length);
      try { current(); } catch { sawCurrent = false; }
      // A few round trips of its own: time for the engine to start another batch, were the slot free.
      for (let i = 0; i < 5; i++) await js[0].db.execute(sql`select 1`);
      active--;
      return doubled(js.map((job) => job.args));
    });
    await task.using(h().db).enqueueMany(Array.from({ length: 40 }, (_, n) => ({ n })));
    expect(await runOnce(app, { db: h().db, now: clock.now, slots: 1 })).toMatchObject({ succeeded: 40 });
    expect(calls).toEqual([10, 10, 10, 10]);
    expect(mostActive).toBe(1);
    expect(sawCurrent).toBe(false);
  });

  it("a handler call that outlives its jobs' timeout times each job out on its own attempt", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let started!: () => void;
    const running = new Promise<void>((resolve) => { started = resolve; });
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => { finish = resolve; });
    const task = app.batchTask("numbers.double", { args: N, maxBatch: 10, timeout: "10s", maxAttempts: 2 }, async (js) => {
      if (js[0].attempt === 1) { started(); await gate; }
      return doubled(js.map((job) => job.args));
    });
    await task.using(h().db).enqueueMany([{ n: 0 }, { n: 1 }]);
    const run = runOnce(app, { db: h().db, now: clock.now });
    await within(running, 20_000, "the handler's call");
    clock.advance(11_000);
    finish();
    expect(await within(run, 20_000, "the invocation")).toMatchObject({ retried: 2 });
    expect((await jobs()).map((j) => [j.state, j.attempt, j.kinds])).toEqual([["queued", 1, ["JobTimeout"]], ["queued", 1, ["JobTimeout"]]]);
    clock.advance(60_000);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 2 });
  });

  it("akadze/testing drains a batch task's jobs in batches", async () => {
    const app = createApp();
    const calls: number[] = [];
    const task = app.batchTask("numbers.double", { args: N, maxBatch: 4, maxWait: "1h" }, (js) => { calls.push(js.length); return doubled(js.map((j) => j.args)); });
    const t = await testApp(app, { db: h().db });
    try {
      await task.using(t.db).enqueueMany(Array.from({ length: 6 }, (_, n) => ({ n })));
      expect(await t.drain()).toMatchObject({ succeeded: 6 });
      expect(calls).toEqual([4, 2]);
      expect((await t.enqueued(task)).map((j) => j.result)).toEqual([0, 2, 4, 6, 8, 10].map((doubled) => ({ doubled })));
    } finally {
      await t.close();
    }
  });

  it("a batch does not wait for jobs queued behind another task's job that has no slot to start in", async () => {
    const { clock, app, task, calls } = batchApp({ maxBatch: 10, maxWait: "1h" }, doubled);
    const ran: string[] = [];
    const plain = app.task("plain", async () => { ran.push(`plain after ${calls.length} calls`); });
    await task.using(h().db).enqueue({ n: 0 });
    await plain.using(h().db).enqueue({});
    await task.using(h().db).enqueueMany([{ n: 1 }, { n: 2 }]);
    // One slot, held by the first batch: the plain job is next in claim order, so the batch cannot grow.
    expect(await runOnce(app, { db: h().db, now: clock.now, slots: 1 })).toMatchObject({ succeeded: 4 });
    expect(calls).toEqual([[0], [1, 2]]);
    expect(ran).toEqual(["plain after 1 calls"]);
  });
}, ["node-postgres", "pglite", "neon-http", "neon-serverless"]);

it("a batch task's options are checked, naming the option, and nothing is registered", () => {
  const app = createApp();
  const bad: [object, RegExp][] = [
    [{ maxBatch: 0 }, /maxBatch must be a whole number from 1 to 1000, got 0/],
    [{ maxBatch: 2.5 }, /maxBatch must be a whole number/],
    [{ maxBatch: "10" }, /maxBatch must be a whole number/],
    [{}, /maxBatch must be a whole number/],
    [{ maxBatch: 10, maxWait: -1 }, /maxWait must be a duration of at least 0/],
    [{ maxBatch: 10, maxWait: "soon" }, /maxWait must be a duration/],
    [{ maxBatch: 10, maxWait: "30s", timeout: "30s" }, /maxWait \(30000 ms\) must be shorter than its timeout \(30000 ms\)/],
    [{ maxBatch: 10, maxAttempts: 0 }, /maxAttempts/],
  ];
  for (const [options, message] of bad) {
    expect(() => app.batchTask("t", options as never, () => {})).toThrow(InvalidInput);
    expect(() => app.batchTask("t", options as never, () => {})).toThrow(message);
  }
  expect(app.tasks.size).toBe(0);
  app.batchTask("t", { maxBatch: 1 }, () => {});
  expect(() => app.batchTask("t", { maxBatch: 1 }, () => {})).toThrow(/already registered/);
  expect(new BatchOutcomeMissing("x")).toBeInstanceOf(Error);
});

it("a batch's answer is matched to its jobs by position or by id, and a job left out gets its own error", () => {
  const jobs = [{ id: 7 }, { id: 8 }, { id: 9 }];
  const kinds = (answer: unknown) => outcomesOf("t", jobs, answer).map((o) => "result" in o ? o.result : (o.error as Error).name);
  const boom = new Fail("boom");
  expect(kinds(["a", boom, null])).toEqual(["a", "Fail", null]);
  expect(kinds(["a"])).toEqual(["a", "BatchOutcomeMissing", "BatchOutcomeMissing"]);
  // eslint-disable-next-line no-sparse-arrays
  expect(kinds(["a", , "c"])).toEqual(["a", "BatchOutcomeMissing", "c"]);
  expect(kinds(new Map<number, unknown>([[9, "c"], [7, "a"], [100, "x"]]))).toEqual(["a", "BatchOutcomeMissing", "c"]);
  expect(kinds(undefined)).toEqual([undefined, undefined, undefined]);
  expect(kinds([1, 2, 3, 4])).toEqual(["BatchOutcomeMissing", "BatchOutcomeMissing", "BatchOutcomeMissing"]);
  expect(kinds({ 7: "a" })).toEqual(["BatchOutcomeMissing", "BatchOutcomeMissing", "BatchOutcomeMissing"]);
  expect((outcomesOf("t", jobs, ["a"])[1] as { error: Error }).error.message).toBe("the batch handler of task t returned no outcome for job 8");
  expect((outcomesOf("t", jobs, "ok")[0] as { error: Error }).error.message)
    .toBe("the batch handler of task t returned a string, not an array of outcomes (one per job, in order) or a Map by job id");
});
