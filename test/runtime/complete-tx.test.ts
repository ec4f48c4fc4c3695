// completeTx / completeBatch: the caller's writes and `succeeded` commit together or not at all (SPEC §2).
import { beforeEach, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import * as v from "valibot";
import { createApp, current, LeaseLost, requestCancel, runOnce, type Db } from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";

const note = (db: Db, text: string) => db.execute(sql`insert into app_notes (text) values (${text})`);

forEachDriver((h, driver) => {
  beforeEach(async () => {
    await h().db.execute(sql`create table if not exists app_notes (id serial primary key, text text not null)`);
    await h().db.execute(sql`truncate app_notes`);
  });
  const notes = async () => (await h().rows("select text from app_notes order by id")).map((r) => r.text);
  const job = async (id: number) => (await h().rows(`select state, attempt, errors from akadze.all_jobs where id = ${id}`))[0];
  const jobsOf = (task: string) => h().rows(`select state, args from akadze.all_jobs where task = '${task}' order by id`);


  if (driver !== "neon-http") {
    it("completeTx commits the block's writes, the next step and `succeeded` together", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      const next = app.task("step.two", { args: v.object({ from: v.number() }) }, async () => {});
      const id = await app.task("step.one", async (_a, j) => {
        await current().completeTx(async (tx) => {
          await note(tx, "report ready");
          await next.using(tx).enqueue({ from: j.id });
        });
      }).using(h().db).enqueue({});
      const summary = await runOnce(app, { db: h().db, now: clock.now, queues: ["default"] });
      expect(summary.succeeded).toBeGreaterThanOrEqual(1);
      expect(await job(id)).toMatchObject({ state: "succeeded", attempt: 1 });
      expect(await notes()).toEqual(["report ready"]);
      expect(await jobsOf("step.two")).toMatchObject([{ args: { from: id } }]);
    });

    it("an error inside completeTx rolls the writes back and spends an attempt", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      const id = await app.task("t", async () => {
        await current().completeTx(async (tx) => {
          await note(tx, "half done");
          throw new Error("disk full");
        });
      }).using(h().db).enqueue({});
      await runOnce(app, { db: h().db, now: clock.now });
      expect(await notes()).toEqual([]);
      const row = await job(id);
      expect(row).toMatchObject({ state: "queued", attempt: 1 });
      expect(row.errors[0].message).toBe("disk full");
    });

    it("completeTx throws and rolls back when this run no longer owns the job", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      let thrown: unknown;
      const id = await app.task("t", async (_a, j) => {
        await h().db.execute(sql`update akadze.jobs set lease_owner = 'another-invocation' where id = ${j.id}`);
        try {
          await current().completeTx(async (tx) => { await note(tx, "must not stay"); });
        } catch (error) { thrown = error; throw error; }
      }).using(h().db).enqueue({});
      await runOnce(app, { db: h().db, now: clock.now });
      expect(thrown).toBeInstanceOf(LeaseLost);
      expect(await notes()).toEqual([]);
      expect(await job(id)).toMatchObject({ state: "running" }); // still the other invocation's
    });

    it("a cancel request while running does not stop completeTx: the block commits and the job succeeds", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      const id = await app.task("t", async (_a, j) => {
        // From another connection; inside the block the job's row is locked by the block's own transaction.
        await requestCancel(h().db, j.id);
        await current().completeTx(async (tx) => { await note(tx, "kept"); });
      }).using(h().db).enqueue({});
      await runOnce(app, { db: h().db, now: clock.now });
      expect(await notes()).toEqual(["kept"]);
      expect(await job(id)).toMatchObject({ state: "succeeded" });
    });

    it("an error inside completeTx after a cancel request cancels the job without spending an attempt", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      const id = await app.task("t", async (_a, j) => {
        await requestCancel(h().db, j.id);
        await current().completeTx(async (tx) => { await note(tx, "x"); throw new Error("broken"); });
      }).using(h().db).enqueue({});
      await runOnce(app, { db: h().db, now: clock.now });
      expect(await notes()).toEqual([]);
      expect(await job(id)).toMatchObject({ state: "cancelled", attempt: 0 });
    });

    it("after completeTx commits the job is succeeded whatever the body does next", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      const id = await app.task("t", async () => {
        await current().completeTx(async (tx) => { await note(tx, "committed"); });
        throw new Error("late failure");
      }).using(h().db).enqueue({});
      await runOnce(app, { db: h().db, now: clock.now });
      expect(await job(id)).toMatchObject({ state: "succeeded", attempt: 1, errors: [] });
    });
  } else {
    it("completeTx on neon-http fails the job at once, with a sentence that points to completeBatch", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      let runs = 0;
      const id = await app.task("t", { maxAttempts: 5 }, async () => {
        runs++;
        await current().completeTx(async () => {});
      }).using(h().db).enqueue({});
      const summary = await runOnce(app, { db: h().db, now: clock.now });
      // No retry can mend it: one run, no attempt left waiting.
      expect([runs, summary.retried, summary.failed]).toEqual([1, 0, 1]);
      const { state, attempt, errors } = await job(id);
      expect([state, attempt]).toEqual(["failed", 1]);
      expect(errors).toHaveLength(1);
      expect(errors[0].kind).toBe("Fail");
      expect(errors[0].message).toMatch(/^completeTx needs an interactive transaction, which the neon-http driver does not have: use current\(\)\.completeBatch/);
    });
  }

  it("completeBatch commits the queries and `succeeded` as one transaction, chaining the next step", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const next = app.task("step.two", { args: v.object({ from: v.number() }) }, async () => {});
    const id = await app.task("step.one", async (_a, j) => {
      await current().completeBatch((db) => [note(db, "batched"), next.using(db).enqueueQuery({ from: j.id })]);
    }).using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now, queues: ["default"], batchSize: 1, drain: false });
    expect(await job(id)).toMatchObject({ state: "succeeded" });
    expect(await notes()).toEqual(["batched"]);
    expect(await jobsOf("step.two")).toMatchObject([{ state: "queued", args: { from: id } }]);
  });

  it("a failing query in completeBatch rolls everything back and spends an attempt", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const id = await app.task("t", async () => {
      await current().completeBatch((db) => [note(db, "gone"), db.execute(sql`insert into app_notes (text) values (null)`)]);
    }).using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now });
    expect(await notes()).toEqual([]);
    expect(await job(id)).toMatchObject({ state: "queued", attempt: 1 });
  });

  it("completeBatch throws LeaseLost and writes nothing when this run no longer owns the job", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let thrown: unknown;
    await app.task("t", async (_a, j) => {
      await h().db.execute(sql`update akadze.jobs set lease_owner = 'another-invocation' where id = ${j.id}`);
      try { await current().completeBatch((db) => [note(db, "must not stay")]); } catch (error) { thrown = error; throw error; }
    }).using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now });
    expect(thrown).toBeInstanceOf(LeaseLost);
    expect(await notes()).toEqual([]);
  });
});
