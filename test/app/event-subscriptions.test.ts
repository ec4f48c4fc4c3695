// Subscriptions (issue 40, item 5): app.on(event, task) and app.sendEvent, which enqueues every subscribed task
// with the payload in the producer's own statement (a transaction, or a neon-http batch), once per event id,
// and still wakes the workflow steps waiting for the event. On every driver, with a test clock.
import { beforeEach, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import * as v from "valibot";
import { createApp, InvalidInput, runOnce, type Db } from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";

const Paid = v.object({ orderId: v.number() });

/** An app with three tasks subscribed to "order.paid", each recording the payloads it ran with. */
function shop() {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  const ran: Record<string, number[]> = { receipt: [], ledger: [], stats: [] };
  const receipt = app.task("receipt.send", { args: Paid }, async ({ orderId }) => { ran.receipt.push(orderId); });
  const ledger = app.task("ledger.book", { args: v.object({ orderId: v.number(), amount: v.optional(v.number()) }), queue: "books" },
    async ({ orderId }) => { ran.ledger.push(orderId); });
  const stats = app.task("stats.count", { args: v.looseObject({}) }, async (args) => { ran.stats.push((args as { orderId: number }).orderId); });
  app.on("order.paid", receipt).on("order.paid", ledger).on("order.paid", stats);
  return { clock, app, ran, receipt, ledger, stats };
}

forEachDriver((h, driver) => {
  beforeEach(async () => {
    await h().db.execute(sql`create table if not exists ev_orders (id int primary key)`);
    await h().db.execute(sql`truncate ev_orders`);
  });
  const orders = async () => (await h().rows("select id from ev_orders order by id")).map((r) => r.id);
  const insertOrder = (db: Db, id: number) => db.execute(sql`insert into ev_orders (id) values (${id})`);
  const invoke = (app: ReturnType<typeof createApp>, clock: ManualClock) => runOnce(app, { db: h().db, now: clock.now });

  it("an event in a rolled-back transaction starts nothing; committed with the producer's insert, each of 3 subscribers runs once", async () => {
    const { clock, app, ran } = shop();
    expect(app.subscribersOf("order.paid")).toEqual(["receipt.send", "ledger.book", "stats.count"]);
    if (driver === "neon-http") {
      // A batch is neon-http's transaction: its last statement fails, so the order and the event roll back together.
      await expect((h().db as any).batch([insertOrder(h().db, 7), app.sendEventQuery(h().db, "order.paid", { orderId: 7 }, { id: "paid-7" }),
        h().db.execute(sql`select 1 / 0`)])).rejects.toThrow();
    } else {
      await expect(h().db.transaction(async (tx) => {
        await insertOrder(tx as unknown as Db, 7);
        const sent = await app.sendEvent(tx as unknown as Db, "order.paid", { orderId: 7 }, { id: "paid-7" });
        expect(sent.started.map((s) => s.task)).toEqual(["receipt.send", "ledger.book", "stats.count"]);
        throw new Error("the order failed");
      })).rejects.toThrow("the order failed");
    }
    expect(await orders()).toEqual([]);
    expect(await h().rows("select count(*)::int as n from akadze.all_jobs")).toEqual([{ n: 0 }]);
    expect(await h().rows("select count(*)::int as n from akadze.sent_events")).toEqual([{ n: 0 }]);
    expect((await invoke(app, clock)).claimed).toBe(0);

    // The same id again, committed this time: the rolled-back send left no trace of it.
    if (driver === "neon-http") {
      await (h().db as any).batch([insertOrder(h().db, 7), app.sendEventQuery(h().db, "order.paid", { orderId: 7 }, { id: "paid-7" })]);
    } else {
      await h().db.transaction(async (tx) => {
        await insertOrder(tx as unknown as Db, 7);
        await app.sendEvent(tx as unknown as Db, "order.paid", { orderId: 7 }, { id: "paid-7" });
      });
    }
    expect(await orders()).toEqual([7]);
    expect(await h().rows("select task, queue, args, state from akadze.all_jobs order by id")).toEqual([
      { task: "receipt.send", queue: "default", args: { orderId: 7 }, state: "queued" },
      { task: "ledger.book", queue: "books", args: { orderId: 7 }, state: "queued" },
      { task: "stats.count", queue: "default", args: { orderId: 7 }, state: "queued" },
    ]);
    const summary = await invoke(app, clock);
    expect(summary.succeeded).toBe(3);
    expect(ran).toEqual({ receipt: [7], ledger: [7], stats: [7] });
    expect((await invoke(app, clock)).claimed).toBe(0);
  });

  it("a repeated event id enqueues nothing more, before and after its jobs ran; another id or another event name is a new event", async () => {
    const { clock, app, ran } = shop();
    const first = await app.sendEvent(h().db, "order.paid", { orderId: 1 }, { id: "paid-1" });
    expect(first).toMatchObject({ id: "paid-1", repeated: false, delivered: 0, woken: 0 });
    expect(first.started).toHaveLength(3);
    expect(await app.sendEvent(h().db, "order.paid", { orderId: 1 }, { id: "paid-1" })).toEqual(
      { id: "paid-1", repeated: true, delivered: 0, woken: 0, started: [] });
    await invoke(app, clock);
    // A retried request after the jobs finished: still the same event.
    clock.advance(60_000);
    expect((await app.sendEvent(h().db, "order.paid", { orderId: 1 }, { id: "paid-1" })).repeated).toBe(true);
    expect((await app.sendEvent(h().db, "order.paid", { orderId: 2 }, { id: "paid-2" })).started).toHaveLength(3);
    // Without an id, each send is its own event.
    const [a, b] = [await app.sendEvent(h().db, "order.paid", { orderId: 3 }), await app.sendEvent(h().db, "order.paid", { orderId: 3 })];
    expect(a.id).not.toBe(b.id);
    expect([a.repeated, b.repeated]).toEqual([false, false]);
    // Ids are per event name: "paid-1" of another event is new (and that event has no subscriber).
    expect(await app.sendEvent(h().db, "order.refunded", { orderId: 1 }, { id: "paid-1" })).toEqual(
      { id: "paid-1", repeated: false, delivered: 0, woken: 0, started: [] });
    await invoke(app, clock);
    for (const list of Object.values(ran)) expect([...list].sort()).toEqual([1, 2, 3, 3]);
    expect(await h().rows("select count(*)::int as n from akadze.all_jobs")).toEqual([{ n: 12 }]);
  });

  it("8 concurrent sends of one id start each subscriber once", async () => {
    const { clock, app, ran } = shop();
    const sends = await Promise.all(Array.from({ length: 8 }, () => app.sendEvent(h().db, "order.paid", { orderId: 5 }, { id: "paid-5" })));
    expect(sends.filter((s) => !s.repeated)).toHaveLength(1);
    expect(sends.flatMap((s) => s.started)).toHaveLength(3);
    await invoke(app, clock);
    expect(ran).toEqual({ receipt: [5], ledger: [5], stats: [5] });
  });

  it("the payload is checked against every subscriber's args before anything is written", async () => {
    const { app } = shop();
    const strict = app.task("fraud.check", { args: v.object({ orderId: v.number(), amount: v.number() }) }, async () => {});
    app.on("order.paid", strict);
    const before = "select (select count(*) from akadze.all_jobs)::int as jobs, (select count(*) from akadze.sent_events)::int as events";
    await expect(app.sendEvent(h().db, "order.paid", { orderId: 1 }, { id: "x" })).rejects.toThrow(
      /Invalid payload of event order\.paid for its subscriber fraud\.check: amount/);
    await expect(app.sendEvent(h().db, "order.paid", { orderId: "1", amount: 3 })).rejects.toThrow(InvalidInput);
    expect(() => app.sendEventQuery(h().db, "order.paid", { orderId: 1 })).toThrow(/fraud\.check/);
    await expect(app.sendEvent(h().db, "order.paid", { orderId: 1, amount: 3 }, { id: "" })).rejects.toThrow(/id of event order\.paid/);
    expect(await h().rows(before)).toEqual([{ jobs: 0, events: 0 }]);
    // A good payload: every subscriber gets it whole (the looser schemas keep the extra field).
    const sent = await app.sendEvent(h().db, "order.paid", { orderId: 1, amount: 3 }, { id: "x" });
    expect(sent.started.map((s) => s.task)).toEqual(["receipt.send", "ledger.book", "stats.count", "fraud.check"]);
    expect(await h().rows("select distinct args from akadze.all_jobs")).toEqual([{ args: { orderId: 1, amount: 3 } }]);
  });

  it("a sent event still wakes the workflow steps waiting for it, once per id, in the same statement that starts the subscribers", async () => {
    const { clock, app, ran } = shop();
    const waiting = app.workflow("order.ship", { args: Paid }, async ({ orderId }, step) =>
      step.waitForEvent("paid", { event: "order.paid", match: { orderId }, timeout: "1d" }));
    const id = await waiting.using(h().db).enqueue({ orderId: 9 });
    await invoke(app, clock); // parks on the event
    const sent = await app.sendEvent(h().db, "order.paid", { orderId: 9 }, { id: "paid-9" });
    expect(sent).toMatchObject({ repeated: false, delivered: 1, woken: 1 });
    expect(sent.started).toHaveLength(3);
    expect(await app.sendEvent(h().db, "order.paid", { orderId: 9 }, { id: "paid-9" })).toMatchObject({ repeated: true, delivered: 0, woken: 0 });
    await invoke(app, clock);
    expect(ran.receipt).toEqual([9]);
    expect(await h().rows(`select state, result from akadze.all_jobs where id = ${id}`)).toEqual([{ state: "succeeded", result: { orderId: 9 } }]);
  });

  it("invocations forget event ids older than the finished jobs' retention, and closed debounce windows", async () => {
    const { clock, app, ran } = shop();
    const notify = app.debounced("user.notify", { window: "5s", leading: true }, async () => {});
    await app.sendEvent(h().db, "order.paid", { orderId: 1 }, { id: "paid-1" });
    await notify.using(h().db, { key: "k" }).enqueue({});
    await invoke(app, clock);
    clock.advance(6 * 86_400_000);
    await invoke(app, clock);
    expect(await h().rows("select id from akadze.sent_events")).toEqual([{ id: "paid-1" }]);
    expect((await app.sendEvent(h().db, "order.paid", { orderId: 1 }, { id: "paid-1" })).repeated).toBe(true);
    clock.advance(2 * 86_400_000); // 8 days: past the default retention of 7 days, with the jobs it started
    await invoke(app, clock);
    expect(await h().rows("select count(*)::int as n from akadze.all_jobs")).toEqual([{ n: 0 }]);
    expect(await h().rows("select (select count(*) from akadze.sent_events)::int as events, (select count(*) from akadze.debounce_windows)::int as windows"))
      .toEqual([{ events: 0, windows: 0 }]);
    expect((await app.sendEvent(h().db, "order.paid", { orderId: 1 }, { id: "paid-1" })).repeated).toBe(false);
    await invoke(app, clock);
    expect(ran.receipt).toEqual([1, 1]);
  });

  it("subscriptions are checked when they are made", () => {
    const { app, receipt } = shop();
    const other = createApp().task("elsewhere", async () => {});
    expect(() => app.on("order.paid", other)).toThrow(/give a task of this app/);
    expect(() => app.on("order.paid", receipt)).toThrow(/receipt\.send is already subscribed to event "order\.paid"/);
    expect(() => app.on("", receipt)).toThrow(/event name/);
    const reindex = app.debounced("search.reindex", { window: "5s" }, async () => {});
    expect(() => app.on("order.paid", reindex as never)).toThrow(/give a task of this app/);
    // A task of this app by name is the same task.
    app.on("order.refunded", app.taskByName("receipt.send"));
    expect(app.subscribersOf("order.refunded")).toEqual(["receipt.send"]);
  });
});

forEachDriver((h) => {
  it("over neon-http, the producer's insert and the event go in one batch; a retried batch starts no subscriber twice", async () => {
    await h().db.execute(sql`create table if not exists ev_log (id serial primary key, text text not null)`);
    await h().db.execute(sql`truncate ev_log`);
    const { clock, app, ran } = shop();
    const db = h().db as any;
    const batch = () => db.batch([db.execute(sql`insert into ev_log (text) values ('paid 4')`),
      app.sendEventQuery(h().db, "order.paid", { orderId: 4 }, { id: "paid-4" })]);
    const [, answer] = await batch();
    expect(answer.rows[0].r).toMatchObject({ repeated: false, started: [{ task: "receipt.send" }, { task: "ledger.book" }, { task: "stats.count" }] });
    await batch(); // the client did not see the answer and sends again: its own insert runs again, the event does nothing
    expect(await h().rows("select count(*)::int as n from ev_log")).toEqual([{ n: 2 }]);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(ran).toEqual({ receipt: [4], ledger: [4], stats: [4] });
  });
}, ["neon-http"]);
