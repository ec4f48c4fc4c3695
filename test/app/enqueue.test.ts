// An enqueue stores the job as asked (its task's queue and attempts, priority, delay or runAt, unique key) or refuses it
// with a clear error writing nothing, and commits or rolls back with the caller's transaction or batch (SPEC §1-§2);
// invocations claim only their queues and leave jobs of tasks they do not know. On every driver; on a node-postgres
// pool an enqueue is a prepared statement.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v from "valibot";
import { createApp, DuplicateJob, InvalidInput, runOnce } from "../../src/index.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";

forEachDriver((h, driver) => {
  const count = async () => (await h().rows("select count(*)::int as n from akadze.all_jobs"))[0].n;
  const mail = () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ran: number[] = [];
    const task = app.task("mail.send", { args: v.object({ userId: v.number() }), queue: "mail", maxAttempts: 6 },
      async ({ userId }) => { ran.push(userId); });
    return { clock, app, task, ran };
  };

  it("stores the task's queue and attempt budget, and never mixes options into args", async () => {
    const { task } = mail();
    const id = await task.using(h().db, { priority: 5, uniqueKey: "u1", limitKey: "vendor" }).enqueue({ userId: 7 });
    const [row] = await h().rows(`select task, queue, args, priority, max_attempts, unique_key, limit_key, state from akadze.all_jobs where id = ${id}`);
    expect(row).toEqual({ task: "mail.send", queue: "mail", args: { userId: 7 }, priority: 5, max_attempts: 6,
      unique_key: "u1", limit_key: "vendor", state: "queued" });
  });

  it("without a test clock, a delay counts from the database's clock, not the host's", async () => {
    const app = createApp();
    const task = app.task("later", async () => {});
    const [id] = await task.using(h().db, { delay: "1h" }).enqueueMany([{}]);
    const [row] = await h().rows(`select (extract(epoch from run_at - created_at) * 1000)::float8 as ms from akadze.all_jobs where id = ${id}`);
    expect(row.ms).toBe(3_600_000); // both stamped by the same statement's now()
  });

  it("enqueueMany inserts every job in one statement and returns their ids in order", async () => {
    const { task } = mail();
    const ids = await task.using(h().db).enqueueMany([{ userId: 1 }, { userId: 2 }, { userId: 3 }]);
    expect(ids).toHaveLength(3);
    const rows = await h().rows(`select id, args from akadze.all_jobs order by id`);
    expect(rows.map((r) => r.id)).toEqual(ids);
    expect(rows.map((r) => r.args.userId)).toEqual([1, 2, 3]);
    expect(await task.using(h().db).enqueueMany([])).toEqual([]);
  });

  it("args that fail the schema are a clear error and nothing is written", async () => {
    const { task } = mail();
    await expect(task.using(h().db).enqueue({ userId: "seven" } as any)).rejects.toThrow(/Invalid args for task mail\.send: userId/);
    await expect(task.using(h().db).enqueueMany([{ userId: 1 }, { nope: true } as any])).rejects.toThrow(InvalidInput);
    expect(await count()).toBe(0);
  });

  for (const [label, options, message] of [
    ["an out-of-range priority", { priority: 40_000 }, /priority must be at most 32767/],
    ["a fractional priority", { priority: 1.5 }, /priority must be an integer/],
    ["a malformed delay", { delay: "soon" }, /Invalid duration "soon"/],
    ["a negative delay", { delay: -5 }, /Invalid duration/],
    ["delay together with runAt", { delay: "1s", runAt: new Date() }, /delay or runAt, not both/],
    ["an unknown option", { prio: 1 }, /prio/],
    ["an empty queue name", { queue: "" }, /queue: must not be empty/],
  ] as const) {
    it(`${label} is a clear error and nothing is written`, async () => {
      const { task } = mail();
      await expect(task.using(h().db, options as any).enqueue({ userId: 1 })).rejects.toThrow(message);
      expect(await count()).toBe(0);
    });
  }

  it("args that are not JSON are refused", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const task = app.task("t", { args: v.object({ at: v.any() }) }, async () => {});
    await expect(task.using(h().db).enqueue({ at: new Date() })).rejects.toThrow(/args must be JSON/);
    expect(await count()).toBe(0);
  });

  it("an unknown task name is a clear error", () => {
    const app = createApp();
    expect(() => app.taskByName("no.such.task")).toThrow(/unknown task "no.such.task"/);
  });

  it("uniqueKey refuses a second job while the first is queued or running, and allows it after", async () => {
    const { task, app, clock } = mail();
    await task.using(h().db, { uniqueKey: "welcome-7" }).enqueue({ userId: 7 });
    const error = await task.using(h().db, { uniqueKey: "welcome-7" }).enqueue({ userId: 7 }).catch((e) => e);
    expect(error).toBeInstanceOf(DuplicateJob);
    expect(error.message).toContain("welcome-7");
    expect(await count()).toBe(1);
    await runOnce(app, { db: h().db, now: clock.now });
    await task.using(h().db, { uniqueKey: "welcome-7" }).enqueue({ userId: 7 });
    expect(await count()).toBe(2);
  });

  it("higher priority runs first, then earlier runAt", async () => {
    const { task, app, clock, ran } = mail();
    await task.using(h().db, { priority: 0 }).enqueue({ userId: 1 });
    await task.using(h().db, { priority: 10 }).enqueue({ userId: 2 });
    await task.using(h().db, { priority: -3 }).enqueue({ userId: 3 });
    await task.using(h().db, { priority: 10, runAt: new Date(clock.now().getTime() - 60_000) }).enqueue({ userId: 4 });
    for (let i = 0; i < 4; i++) await runOnce(app, { db: h().db, now: clock.now, batchSize: 1 });
    expect(ran).toEqual([4, 2, 1, 3]);
  });

  it("a delayed job waits for its delay and a runAt job for its instant", async () => {
    const { task, app, clock, ran } = mail();
    await task.using(h().db, { delay: "30s" }).enqueue({ userId: 1 });
    await task.using(h().db, { runAt: new Date(clock.now().getTime() + 90_000) }).enqueue({ userId: 2 });
    expect((await runOnce(app, { db: h().db, now: clock.now })).claimed).toBe(0);
    clock.advance(30_000);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(ran).toEqual([1]);
    clock.advance(60_000);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(ran).toEqual([1, 2]);
  });

  it("a job for a task this app does not know stays queued for an app that knows it", async () => {
    const { task, clock } = mail();
    await task.using(h().db).enqueue({ userId: 1 });
    const other = createApp({ clock: clock.now });
    other.task("something.else", async () => {});
    expect((await runOnce(other, { db: h().db, now: clock.now })).claimed).toBe(0);
    expect((await h().rows("select state from akadze.all_jobs"))[0].state).toBe("queued");
  });

  it("invocations claim only the queues they are given", async () => {
    const { task, app, clock, ran } = mail();
    await task.using(h().db).enqueue({ userId: 1 });
    await task.using(h().db, { queue: "bulk" }).enqueue({ userId: 2 });
    await runOnce(app, { db: h().db, now: clock.now, queues: ["bulk"] });
    expect(ran).toEqual([2]);
  });

  if (driver !== "neon-http") {
    it("enqueue inside a transaction that rolls back leaves no job", async () => {
      const { task } = mail();
      await expect(h().db.transaction(async (tx) => {
        await task.using(tx as any).enqueue({ userId: 1 });
        throw new Error("order failed");
      })).rejects.toThrow("order failed");
      expect(await count()).toBe(0);
    });
  } else {
    it("enqueueQuery joins a failing db.batch and is rolled back with it", async () => {
      const { task } = mail();
      const db = h().db as any;
      const { sql } = await import("drizzle-orm");
      await expect(db.batch([task.using(db).enqueueQuery({ userId: 1 }), db.execute(sql`select 1 / 0`)])).rejects.toThrow();
      expect(await count()).toBe(0);
    });
  }
});

describe("on a node-postgres pool", () => {
  let t: TestDatabase;
  beforeAll(async () => { t = await openTestDatabase("enqueue_prepared"); });
  afterAll(async () => { await t?.close(); });

  it("an enqueue is a statement its connection prepared once, and a duplicate is still DuplicateJob", async () => {
    await t.oneConnection(async (db, pool) => {
      const task = createApp().task("prepared", { args: v.object({ n: v.number() }) }, async () => {});
      for (let n = 1; n <= 3; n++) await task.using(db).enqueue({ n });
      await task.using(db).enqueueMany([{ n: 4 }, { n: 5 }]);
      await task.using(db, { uniqueKey: "k" }).enqueue({ n: 6 });
      // The pool's one connection: the enqueues' texts, each prepared once (a unique key is a parameter, not a new text).
      const { rows } = await pool.query("select count(*)::int as n from pg_prepared_statements where statement like '%insert into akadze.jobs%'");
      expect(rows[0].n).toBe(1);
      // (A failed query costs pg's pool its connection: checked last.)
      await expect(task.using(db, { uniqueKey: "k" }).enqueue({ n: 7 })).rejects.toBeInstanceOf(DuplicateJob);
      expect((await t.rows("select args->>'n' as n from akadze.all_jobs order by id")).map((r) => Number(r.n))).toEqual([1, 2, 3, 4, 5, 6]);
    });
  });
  // (A pooler that drops a session's prepared statements: test/db/prepared-statements.test.ts.)
});
