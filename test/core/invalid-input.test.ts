// Bad options and input are InvalidInput naming the field, and nothing is written or claimed (issue 11, items 5-7):
// runOnce and runWorker options, args, enqueue options, job ids, names, task options, cron, limits and ages; every driver.
import { expect, it } from "vitest";
import * as v from "valibot";
import {
  createApp, getJob, InvalidInput, listWorkers, pauseQueue, pruneJobs, renderMetrics, requestCancel, requeue, runOnce, runWorker, setLimit,
  type LimitOptions, type RunOnceOptions,
} from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";

/** The error `fn` throws or rejects with. */
async function failure(fn: () => unknown): Promise<Error> {
  try {
    await fn();
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a failure");
}

function nested(depth: number): unknown {
  let value: unknown = "leaf";
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

forEachDriver((h) => {
  const jobs = () => h().rows<{ state: string; attempt: number }>("select state, attempt from akadze.all_jobs order by id");
  const count = async (table: string) => (await h().rows<{ n: number }>(`select count(*)::int as n from akadze.${table}`))[0].n;

  for (const [label, options, field] of [
    ["slots: NaN (an unset Number(process.env.SLOTS))", { slots: NaN }, /slots/],
    ["slots: 0", { slots: 0 }, /slots must be at least 1/],
    ["batchSize: -1", { batchSize: -1 }, /batchSize must be at least 1/],
    ["batchSize: 1.5", { batchSize: 1.5 }, /batchSize must be a whole number/],
    ['lease: "0ms"', { lease: "0ms" }, /lease must be at least 1000 ms/],
    ["heartbeat: 0", { heartbeat: 0 }, /heartbeat must be at least 10 ms/],
    ['budget: "soon"', { budget: "soon" }, /budget/],
    ['budget: "30d" (past the longest timer)', { budget: "30d" }, /budget/],
    ['queues: [""]', { queues: [""] }, /queues\.0: must not be empty/],
    ["queues: []", { queues: [] }, /at least one queue/],
    ["an id with a NUL byte", { id: "inv\u0000" }, /id: contains a NUL byte/],
    ['retention: "999999999999d"', { retention: "999999999999d" }, /retention/],
    ["retention: { batch: 0 }", { retention: { batch: 0 } }, /batch must be at least 1/],
  ] as const) {
    it(`runOnce with ${label} is InvalidInput naming the field, and claims nothing`, async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      let ran = 0;
      await app.task("t", async () => { ran++; }).using(h().db).enqueue({});
      const error = await failure(() => runOnce(app, { db: h().db, now: clock.now, ...(options as Partial<RunOnceOptions>) }));
      expect(error).toBeInstanceOf(InvalidInput);
      expect(error.message).toMatch(field);
      expect(ran).toBe(0);
      expect(await jobs()).toEqual([{ state: "queued", attempt: 0 }]);
      expect(await count("workers")).toBe(0);
    });
  }

  it("runWorker with slots: NaN is InvalidInput and writes nothing", async () => {
    const app = createApp();
    await app.task("t", async () => {}).using(h().db).enqueue({});
    const error = await failure(() => runWorker(app, { db: h().db, slots: NaN }));
    expect(error).toBeInstanceOf(InvalidInput);
    expect(error.message).toMatch(/slots/);
    expect(await count("workers")).toBe(0);
    expect(await jobs()).toEqual([{ state: "queued", attempt: 0 }]);
  });

  for (const [label, args, path] of [
    ["a NUL byte", { note: "a\u0000b" }, /args\.note: contains a NUL byte/],
    ["a lone surrogate", { note: "\ud800" }, /args\.note: contains a lone UTF-16 surrogate/],
    ["a lone low surrogate deep in an array", { list: [1, { x: ["ok", "x\udc00"] }] }, /args\.list\[1\]\.x\[1\]: contains a lone UTF-16 surrogate/],
    ["a NUL byte in a key", { ["k\u0000"]: 1 }, /the key .* contains a NUL byte/],
    ["nesting 5,000 deep", nested(5_000), /nested deeper than 100 levels/],
  ] as const) {
    it(`args with ${label} are InvalidInput naming where, and nothing is written`, async () => {
      const app = createApp();
      const task = app.task("t", { args: v.looseObject({}) }, async () => {});
      const error = await failure(() => task.using(h().db).enqueue(args as never));
      expect(error).toBeInstanceOf(InvalidInput);
      expect(error.message).toMatch(path);
      expect(() => task.using(h().db).enqueueQuery(args as never)).toThrow(InvalidInput);
      await expect(task.using(h().db).enqueueMany([{ fine: "yes" }, args] as never)).rejects.toThrow(/args\[1\]/);
      expect(await count("jobs")).toBe(0);
    });
  }

  it("well-formed text is stored as is: a surrogate pair, escapes, and nesting at the bound", async () => {
    const app = createApp();
    const task = app.task("t", { args: v.looseObject({}) }, async () => {});
    const args = { emoji: "\ud83d\ude00", text: "tab\tquote\"backslash\\", deep: nested(90) };
    const id = await task.using(h().db).enqueue(args);
    expect((await getJob(h().db, id))?.args).toEqual(args);
  });

  for (const [label, options, field] of [
    ["runAt in year 200000", { runAt: new Date(Date.UTC(200_000, 0, 1)) }, /runAt must lie between 1970-01-01 and 9999-12-31/],
    ["runAt an invalid Date", { runAt: new Date("nope") }, /runAt must be a valid Date/],
    ["expiresAt in year 10000", { expiresAt: new Date(Date.UTC(10_000, 0, 1)) }, /expiresAt must lie between/],
    ["priority 40000", { priority: 40_000 }, /priority must be at most 32767/],
    ["delay 1e20", { delay: 1e20 }, /delay must be at most/],
    ["delay Infinity", { delay: Infinity }, /delay/],
    ["a queue name with a NUL byte", { queue: "mail\u0000" }, /queue: contains a NUL byte/],
    ["a limit key 201 characters long", { limitKey: "k".repeat(201) }, /limitKey: must be at most 200 characters/],
    ["a unique key with a lone surrogate", { uniqueKey: "\udfff" }, /uniqueKey: contains a lone UTF-16 surrogate/],
  ] as const) {
    it(`enqueue with ${label} is InvalidInput naming the field, and nothing is written`, async () => {
      const app = createApp();
      const task = app.task("t", async () => {});
      const error = await failure(() => task.using(h().db, options as object).enqueue({}));
      expect(error).toBeInstanceOf(InvalidInput);
      expect(error.message).toMatch(field);
      expect(await count("jobs")).toBe(0);
    });
  }

  it("a clock outside the timestamp range is refused at enqueue", async () => {
    const app = createApp({ clock: () => new Date(Date.UTC(9999, 11, 31)) });
    await expect(app.task("t", async () => {}).using(h().db, { delay: "365d" }).enqueue({})).rejects.toThrow(/between 1970 and 9999/);
    expect(await count("jobs")).toBe(0);
  });

  for (const [label, call] of [
    ["requestCancel(db, 2 ** 63)", (db: never) => requestCancel(db, 2 ** 63)],
    ["requestCancel(db, 2 ** 53) (would round)", (db: never) => requestCancel(db, 2 ** 53)],
    ["requeue(db, 2 ** 53 + 2)", (db: never) => requeue(db, 2 ** 53 + 2)],
    ["getJob(db, 1.5)", (db: never) => getJob(db, 1.5)],
    ["requestCancel(db, -1)", (db: never) => requestCancel(db, -1)],
  ] as const) {
    it(`${label} is InvalidInput and changes nothing`, async () => {
      const app = createApp();
      await app.task("t", async () => {}).using(h().db).enqueue({});
      const error = await failure(() => call(h().db as never));
      expect(error).toBeInstanceOf(InvalidInput);
      expect(error.message).toMatch(/job id/);
      expect(await h().rows("select state, cancel_requested from akadze.all_jobs")).toEqual([{ state: "queued", cancel_requested: false }]);
    });
  }

  it("names with a NUL byte are refused for tasks, schedules, queues and limit keys, and nothing is written", async () => {
    const app = createApp();
    expect(() => app.task("bad\u0000name", async () => {})).toThrow(/Invalid task name: contains a NUL byte/);
    expect(() => app.task("t", { queue: "q\u0000" }, async () => {})).toThrow(/queue: contains a NUL byte/);
    expect(() => app.periodic("p\u0000", { every: "5m" }, async () => {})).toThrow(InvalidInput);
    app.task("ok", async () => {});
    expect(() => app.addSchedules([{ name: "s\u0000", task: "ok", every: "1h" }])).toThrow(/name: contains a NUL byte/);
    expect(() => app.task("x".repeat(201), async () => {})).toThrow(/at most 200 characters/);
    expect([...app.tasks.keys()]).toEqual(["ok"]);
    expect(app.schedules.size).toBe(0);
    await expect(pauseQueue(h().db, "q\u0000")).rejects.toThrow(InvalidInput);
    await expect(setLimit(h().db, "k\u0000", { maxRunning: 1 })).rejects.toThrow(InvalidInput);
    expect(await count("queues")).toBe(0);
    expect(await count("limits")).toBe(0);
    // An app with only valid names keeps running.
    expect((await runOnce(app, { db: h().db })).claimed).toBe(0);
  });

  it("task options out of their column's range are refused when the task is declared", () => {
    const app = createApp();
    expect(() => app.task("a", { maxAttempts: 1e10 }, async () => {})).toThrow(/maxAttempts must be at most 2147483646/);
    expect(() => app.task("b", { maxAttempts: 0 }, async () => {})).toThrow(/maxAttempts must be at least 1/);
    expect(() => app.task("c", { priority: -40_000 }, async () => {})).toThrow(/priority must be at least -32768/);
    expect(() => app.task("d", { timeout: "30d" }, async () => {})).toThrow(/timeout must be at most 2147483647 ms/);
    expect(() => app.task("e", { timeout: 0 }, async () => {})).toThrow(/timeout must be longer than zero/);
    expect(() => app.task("f", { args: { userId: 1 } as never }, async () => {})).toThrow(/args must be a synchronous valibot schema/);
    // A retry policy's attempt budget has the same bound; a task's limitWait the same range as an enqueue's.
    expect(() => app.task("g", { backoff: { maxAttempts: 3e9 } }, async () => {})).toThrow(/maxAttempts must be at most 2147483646/);
    expect(() => app.task("h", { limitWait: 4e12 }, async () => {})).toThrow(/limitWait must be at most/);
    expect(app.tasks.size).toBe(0);
  });

  it("cron takes 5 fields, or 6 with seconds first; a 7-field expression is refused", () => {
    const app = createApp();
    expect(() => app.periodic("seven", { cron: "0 0 * * * * 2030" }, async () => {})).toThrow(/use 5 fields .* it has 7/);
    expect(() => app.periodic("nickname", { cron: "@hourly" }, async () => {})).toThrow(/it has 1/);
    app.periodic("five", { cron: "0 * * * *" }, async () => {});
    app.periodic("six", { cron: "*/10 * * * * *" }, async () => {});
    expect([...app.schedules.keys()]).toEqual(["five", "six"]);
  });

  it("a schedule's args get the same storable-JSON check as enqueued args", () => {
    const app = createApp();
    app.task("t", { args: v.looseObject({}) }, async () => {});
    expect(() => app.addSchedules([{ name: "s", task: "t", every: "1h", args: { note: "\u0000" } }])).toThrow(/args\.note: contains a NUL byte/);
    expect(app.schedules.size).toBe(0);
  });

  it("limits above the documented bound (10,000: each is a row) are refused and write no rows", async () => {
    for (const options of [{ maxRunning: 2_000_000 }, { maxRunning: 10_001 }, { maxStarts: 10_001, window: "1m" }, { maxStarts: 5, window: "400d" }] as LimitOptions[]) {
      await expect(setLimit(h().db, "vendor", options)).rejects.toThrow(InvalidInput);
    }
    expect(await count("limits")).toBe(0);
    expect(await count("limit_slots")).toBe(0);
    expect(await count("limit_tokens")).toBe(0);
    await setLimit(h().db, "vendor", { maxRunning: 3 });
    expect(await count("limit_slots")).toBe(3);
  });

  it("an age out of range is InvalidInput in pruneJobs, renderMetrics and listWorkers, not a RangeError", async () => {
    await expect(pruneJobs(h().db, { olderThan: "999999999999d" })).rejects.toThrow(/olderThan must be at most/);
    await expect(renderMetrics(h().db, { window: "999999999999d" })).rejects.toThrow(/window must be at most/);
    await expect(listWorkers(h().db, { since: "999999999999d" })).rejects.toThrow(/since must be at most/);
    await expect(renderMetrics(h().db, { now: new Date("nope") })).rejects.toThrow(InvalidInput);
  });
});
