// Debounce on enqueue (issue 27, item 2): enqueues of a debounced task under one key within its window
// coalesce into one job, run a window after the latest (at most maxWait after the first), whose handler gets
// every payload in order; inside the caller's transaction, under concurrent writers, over neon-http's batch.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import * as v from "valibot";
import { createApp, InvalidInput, runOnce, setLimit } from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";

const Doc = v.object({ doc: v.number() });

function debounceApp(options: { window: string; maxWait?: string }) {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  const runs: { key: string; payloads: number[] }[] = [];
  const reindex = app.debounced("search.reindex", { args: Doc, window: options.window as "5s", maxWait: options.maxWait as "1m" | undefined },
    async (payloads, job) => { runs.push({ key: String(job.id), payloads: payloads.map((p) => p.doc) }); });
  return { clock, app, reindex, runs };
}

forEachDriver((h) => {
  it("enqueues under one key within the window make one job, run a window after the latest, with every payload in order", async () => {
    const { clock, app, reindex, runs } = debounceApp({ window: "5s" });
    const a = reindex.using(h().db, { key: "site:1" });
    const ids = [await a.enqueue({ doc: 1 })];
    clock.advance(3_000);
    ids.push(await a.enqueue({ doc: 2 }));
    ids.push(await reindex.using(h().db, { key: "site:2" }).enqueue({ doc: 9 }));
    clock.advance(3_000);
    ids.push(await a.enqueue({ doc: 3 }));
    expect(ids[0]).toBe(ids[1]);
    expect(ids[3]).toBe(ids[0]);
    expect(ids[2]).not.toBe(ids[0]);
    // site:1's window restarted at 6 s: nothing is due at 10 s but site:2's job (due at 8 s).
    clock.advance(4_000);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(runs.map((r) => r.payloads)).toEqual([[9]]);
    clock.advance(1_000);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(runs.map((r) => r.payloads)).toEqual([[9], [1, 2, 3]]);
    // Once its job was claimed, the key starts a new one.
    const next = await a.enqueue({ doc: 4 });
    expect(next).not.toBe(ids[0]);
    expect(await h().rows("select task, state, args from akadze.all_jobs order by id")).toEqual([
      { task: "search.reindex", state: "succeeded", args: [{ doc: 1 }, { doc: 2 }, { doc: 3 }] },
      { task: "search.reindex", state: "succeeded", args: [{ doc: 9 }] },
      { task: "search.reindex", state: "queued", args: [{ doc: 4 }] },
    ]);
  });

  it("a claimed job that goes back to queued (its lease expired) takes no more payloads and clashes with no newer job", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    let started!: () => void;
    const running = new Promise<void>((resolve) => { started = resolve; });
    const seen: number[][] = [];
    const reindex = app.debounced("search.reindex", { args: Doc, window: "1s", maxAttempts: 3 }, async (payloads, job) => {
      seen.push(payloads.map((p) => p.doc));
      if (payloads[0].doc === 1 && job.attempt === 1) { started(); await gate; }
    });
    const a = reindex.using(h().db, { key: "k" });
    const first = await a.enqueue({ doc: 1 });
    clock.advance(1_000);
    const stuck = runOnce(app, { db: h().db, now: clock.now, lease: "30s", drain: false });
    await Promise.race([running, stuck.then((s) => { throw new Error(`ended first: ${JSON.stringify(s)}`); }), new Promise((_, reject) => setTimeout(() => reject(new Error("never started")), 10_000))]);
    const second = await a.enqueue({ doc: 2 }); // the first is running: a new job
    expect(second).not.toBe(first);
    // The first invocation's lease lapses; the next invocation recovers its job into queued, beside the newer one.
    clock.advance(60_000);
    const summary = await runOnce(app, { db: h().db, now: clock.now });
    expect(summary).toMatchObject({ recovered: 1 });
    release();
    await stuck;
    // The recovered job waits out its retry backoff, still with its own payloads only; the next key's payload made its own job.
    const third = await a.enqueue({ doc: 3 });
    expect([first, second]).not.toContain(third);
    clock.advance(10 * 60_000);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(seen.slice(1).sort()).toEqual([[1], [2], [3]]);
    expect(await h().rows("select id, state from akadze.all_jobs order by id")).toEqual(
      [first, second, third].map((id) => ({ id, state: "succeeded" })));
  });

  it("maxWait bounds how long a steady stream of enqueues can hold its job back", async () => {
    const { clock, app, reindex, runs } = debounceApp({ window: "5s", maxWait: "12s" });
    const a = reindex.using(h().db, { key: "k" });
    // One every 4 s: each would push the run 5 s later, forever; maxWait runs it 12 s after the first.
    for (let doc = 1; doc <= 4; doc++) {
      await a.enqueue({ doc });
      clock.advance(4_000);
    }
    expect(await h().rows("select extract(epoch from run_at - created_at)::int as wait from akadze.jobs")).toEqual([{ wait: 12 }]);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(runs.map((r) => r.payloads)).toEqual([[1, 2, 3, 4]]);
  });

  it("bad input is refused with a sentence and writes nothing", async () => {
    const { reindex } = debounceApp({ window: "5s" });
    expect(() => reindex.using(h().db, { key: "" })).toThrow(/key must be a non-empty string/);
    await expect(reindex.using(h().db, { key: "k" }).enqueue({ doc: "x" } as never)).rejects.toThrow(InvalidInput);
    const app = createApp();
    expect(() => app.debounced("d1", { window: "0s" as "5s" }, async () => {})).toThrow(/window must be a positive duration/);
    expect(() => app.debounced("d2", { window: "5s", maxWait: "1s" }, async () => {})).toThrow(/maxWait must be a duration no shorter than the window/);
    expect(await h().rows("select count(*)::int as n from akadze.all_jobs")).toEqual([{ n: 0 }]);
  });
});

forEachDriver((h) => {
  it("a debounced enqueue goes in a db.batch with the app's own write", async () => {
    const { clock, app, reindex, runs } = debounceApp({ window: "1s" });
    const a = reindex.using(h().db, { key: "k" });
    await (h().db as any).batch([a.enqueueQuery({ doc: 1 }), a.enqueueQuery({ doc: 2 })]);
    clock.advance(1_000);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(runs.map((r) => r.payloads)).toEqual([[1, 2]]);
  });
}, ["neon-http"]);

describe("concurrent writers inside transactions", () => {
  let t: TestDatabase;
  beforeAll(async () => { t = await openTestDatabase("debounce"); });
  afterAll(async () => { await t?.close(); });
  beforeEach(async () => { await t.reset(); });

  it("1,000 enqueues from 8 writers, some rolled back, run exactly one job with exactly the committed payloads", async () => {
    const { clock, app, reindex, runs } = debounceApp({ window: "1m" });
    const committed: number[] = [];
    const writer = async (w: number) => {
      for (let i = 0; i < 125; i++) {
        const doc = w * 1000 + i;
        const rollBack = i % 5 === 3;
        await t.db.transaction(async (tx) => {
          await reindex.using(tx as never, { key: "hot" }).enqueue({ doc });
          if (rollBack) tx.rollback();
        }).catch((error) => { if (!rollBack) throw error; });
        if (!rollBack) committed.push(doc);
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, w) => writer(w)));
    clock.advance(60_000);
    const summary = await runOnce(app, { db: t.db, now: clock.now });
    expect(summary.succeeded).toBe(1);
    expect(runs).toHaveLength(1);
    const got = runs[0].payloads;
    expect([...got].sort((x, y) => x - y)).toEqual([...committed].sort((x, y) => x - y));
    expect(got).toHaveLength(800);
    // Each writer's payloads in the order it enqueued them.
    for (let w = 0; w < 8; w++) {
      const own = got.filter((d) => Math.floor(d / 1000) === w);
      expect(own).toEqual(committed.filter((d) => Math.floor(d / 1000) === w));
    }
    expect(await t.rows("select count(*)::int as n from akadze.all_jobs")).toEqual([{ n: 1 }]);
  }, 60_000);
});

// Leading edge (issue 40, item 6a): the first enqueue of a quiet key runs at once; the ones within its window
// coalesce into one trailing job, a window after the latest; a burst of one runs once.
function leadingApp(options: { window: string; maxWait?: string }) {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  const runs: number[][] = [];
  const notify = app.debounced("user.notify", { args: Doc, window: options.window as "5s", maxWait: options.maxWait as "1m" | undefined, leading: true },
    async (payloads) => { runs.push(payloads.map((p) => p.doc)); });
  return { clock, app, notify, runs };
}

forEachDriver((h, driver) => {
  const invoke = (app: ReturnType<typeof createApp>, clock: ManualClock) => runOnce(app, { db: h().db, now: clock.now });

  it("leading: the first enqueue of a quiet key runs at once, the next ones make one trailing job a window after the latest, a lone one runs once", async () => {
    const { clock, app, notify, runs } = leadingApp({ window: "5s" });
    const k = notify.using(h().db, { key: "user:1" });
    const lead = await k.enqueue({ doc: 1 });
    await invoke(app, clock);
    expect(runs).toEqual([[1]]);
    clock.advance(1_000);
    const trail = await k.enqueue({ doc: 2 });
    expect(trail).not.toBe(lead);
    clock.advance(2_000);
    expect(await k.enqueue({ doc: 3 })).toBe(trail);
    clock.advance(4_000); // 7 s: the trailing job is due at 8 s, five seconds after the last enqueue
    await invoke(app, clock);
    expect(runs).toEqual([[1]]);
    clock.advance(1_000);
    await invoke(app, clock);
    expect(runs).toEqual([[1], [2, 3]]);
    // At 8 s the key is quiet again: the next enqueue runs at once, and alone it makes no trailing job.
    clock.advance(12_000);
    await k.enqueue({ doc: 4 });
    await invoke(app, clock);
    clock.advance(60_000);
    await invoke(app, clock);
    expect(runs).toEqual([[1], [2, 3], [4]]);
    expect(await h().rows("select args, state, (run_at = created_at) as at_once from akadze.all_jobs order by id")).toEqual([
      { args: [{ doc: 1 }], state: "succeeded", at_once: true },
      { args: [{ doc: 2 }, { doc: 3 }], state: "succeeded", at_once: false },
      { args: [{ doc: 4 }], state: "succeeded", at_once: true },
    ]);
  });

  it("leading with maxWait: a steady stream runs its first payload at once, then a trailing job every maxWait", async () => {
    const { clock, app, notify, runs } = leadingApp({ window: "5s", maxWait: "12s" });
    const k = notify.using(h().db, { key: "k" });
    // One every 4 s, each run right after its enqueue: the key is never quiet again after the first.
    for (let doc = 1; doc <= 7; doc++) {
      await k.enqueue({ doc });
      await invoke(app, clock);
      clock.advance(4_000);
    }
    clock.advance(2_000); // 30 s: the second trailing job (first payload at 20 s) is due at 29 s
    await invoke(app, clock);
    expect(runs).toEqual([[1], [2, 3, 4, 5], [6, 7]]);
  });

  it("a leading task and a trailing one under the same key keep their own windows", async () => {
    const { clock, app, notify, runs } = leadingApp({ window: "5s" });
    const trailingRuns: number[][] = [];
    const reindex = app.debounced("search.reindex", { args: Doc, window: "5s" }, async (payloads) => { trailingRuns.push(payloads.map((p) => p.doc)); });
    await notify.using(h().db, { key: "k" }).enqueue({ doc: 1 });
    await reindex.using(h().db, { key: "k" }).enqueue({ doc: 1 });
    await invoke(app, clock);
    expect([runs, trailingRuns]).toEqual([[[1]], []]);
    clock.advance(2_000);
    await notify.using(h().db, { key: "k" }).enqueue({ doc: 2 });
    await reindex.using(h().db, { key: "k" }).enqueue({ doc: 2 });
    clock.advance(5_000);
    await invoke(app, clock);
    expect([runs, trailingRuns]).toEqual([[[1], [2]], [[1, 2]]]);
  });

  it("leading and trailing jobs carry their limit key: maxStarts 1 per minute holds back the second key's leading job", async () => {
    const { clock, app, notify, runs } = leadingApp({ window: "5s" });
    await setLimit(h().db, "mailer", { maxStarts: 1, window: "1m" });
    await notify.using(h().db, { key: "user:1", limitKey: "mailer" }).enqueue({ doc: 1 });
    await notify.using(h().db, { key: "user:2", limitKey: "mailer" }).enqueue({ doc: 2 });
    clock.advance(1_000);
    await notify.using(h().db, { key: "user:1", limitKey: "mailer" }).enqueue({ doc: 3 }); // user:1's trailing job, due at 6 s
    await invoke(app, clock);
    expect(runs).toEqual([[1]]);
    // A start's token comes back a window and a second (its slack) after it.
    clock.advance(61_000);
    await invoke(app, clock);
    expect(runs).toEqual([[1], [2]]);
    clock.advance(61_000);
    await invoke(app, clock);
    expect(runs).toEqual([[1], [2], [3]]);
    expect(await h().rows("select distinct limit_key from akadze.all_jobs")).toEqual([{ limit_key: "mailer" }]);
  });

  it("8 concurrent enqueues of a quiet key: exactly one runs at once, the other 7 payloads make one trailing job", async () => {
    const { clock, app, notify, runs } = leadingApp({ window: "5s" });
    const ids = await Promise.all(Array.from({ length: 8 }, (_, i) => notify.using(h().db, { key: "hot" }).enqueue({ doc: i })));
    expect(new Set(ids).size).toBe(2);
    expect(await h().rows("select jsonb_array_length(args) as n, extract(epoch from run_at - created_at)::int as wait from akadze.jobs order by id")).toEqual([
      { n: 1, wait: 0 }, { n: 7, wait: 5 },
    ]);
    clock.advance(5_000);
    await invoke(app, clock);
    expect(runs.map((r) => r.length)).toEqual([1, 7]);
  });

  if (driver !== "neon-http") {
    it("a rolled-back leading enqueue leaves the key quiet: the next one runs at once", async () => {
      const { clock, app, notify, runs } = leadingApp({ window: "5s" });
      await expect(h().db.transaction(async (tx) => {
        await notify.using(tx as never, { key: "k" }).enqueue({ doc: 1 });
        throw new Error("the user row failed");
      })).rejects.toThrow("the user row failed");
      clock.advance(1_000);
      await notify.using(h().db, { key: "k" }).enqueue({ doc: 2 });
      await invoke(app, clock);
      expect(runs).toEqual([[2]]);
    });
  }

  it("leading options and keys are checked", () => {
    const app = createApp();
    expect(() => app.debounced("d", { window: "5s", leading: "yes" as never }, async () => {})).toThrow(/leading must be true or false/);
    const { notify } = leadingApp({ window: "5s" });
    expect(() => notify.using(h().db, { key: "k", limitKey: "" })).toThrow(/limitKey must be a non-empty string/);
  });
});

forEachDriver((h) => {
  it("leading enqueues go in a db.batch: the first runs at once, the second trails", async () => {
    const { clock, app, notify, runs } = leadingApp({ window: "1s" });
    const k = notify.using(h().db, { key: "k" });
    await (h().db as any).batch([k.enqueueQuery({ doc: 1 }), k.enqueueQuery({ doc: 2 })]);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(runs).toEqual([[1]]);
    clock.advance(1_000);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(runs).toEqual([[1], [2]]);
  });
}, ["neon-http"]);
