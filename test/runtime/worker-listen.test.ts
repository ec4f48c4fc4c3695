// runWorker's LISTEN (issue 21, items 6 and 7): on a pool of one connection the worker polls instead of holding that
// connection (it used to hang, deaf to abort); a listening connection that dies is replaced, so enqueues wake the worker
// again; a woken lane's claim (issue 38, item 4) is a statement Postgres has planned before, and leaves recovery to a
// later claim (Postgres plans recovery's seldom-sent variant afresh each time); a stopped worker's listening connection
// goes back to its pool, no longer listening; lanes claim while the LISTEN is on its way, and look once more after it.
import { afterAll, beforeAll, beforeEach, expect, it, vi } from "vitest";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import * as v from "valibot";
import { createApp, type Db } from "../../src/index.js";
import { runWorker } from "../../src/runtime/run-worker.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { waitFor } from "../support/wait-for.js";
import { isClaim, sentStatement } from "../support/statements.js";
import { ManualClock } from "../support/clock.js";
import { RECOVERY_EVERY_MS } from "../../src/runtime/riders.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("listen"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} after ${ms} ms`)), ms); })])
    .finally(() => clearTimeout(timer));
}

const listeners = async () => (await t.rows<{ pid: number }>(
  "select pid from pg_stat_activity where datname = current_database() and query ilike 'listen %'")).map((r) => r.pid);

it("a worker on a pool with max 1 runs jobs and stops on abort", async () => {
  await t.oneConnection(async (db) => {
    const app = createApp();
    const task = app.task("one", { args: v.object({}) }, async () => "ok");
    await task.using(db).enqueue({});
    const stop = new AbortController();
    const warnings: string[] = [];
    const worker = runWorker(app, { db, slots: 1, signal: stop.signal, onError: (e) => warnings.push(String(e)) });
    // Deadlines for a loaded machine, below the test's 60 s (8 s and 5 s were all the test allowed before).
    await within(waitFor(async () => (await t.rows("select state from akadze.all_jobs"))[0].state === "succeeded", "the job", { timeoutMs: 30_000 }), 35_000, "the job had not run");
    stop.abort();
    expect(await within(worker, 15_000, "the worker had not stopped")).toMatchObject({ succeeded: 1 });
    expect(warnings.some((w) => /polls for enqueues instead/.test(w))).toBe(true);
  });
});

it("without onError, a worker says on stderr why it polls, once", async () => {
  const said = vi.spyOn(console, "error").mockImplementation(() => {});
  try {
    await t.oneConnection(async (db) => {
      const stop = new AbortController();
      const worker = runWorker(createApp(), { db, slots: 1, signal: stop.signal });
      await waitFor(async () => said.mock.calls.length > 0, "the worker's line on stderr", { timeoutMs: 20_000 });
      stop.abort();
      await within(worker, 15_000, "the worker had not stopped");
    });
    expect(said.mock.calls.map((c) => String(c[0]))).toEqual([expect.stringMatching(/^akadze worker wrk-\S+: the pool has 1 connection: .*polls for enqueues instead/)]);
  } finally {
    said.mockRestore();
  }
});

it("listens again after its listening connection dies, and an enqueue wakes it then", async () => {
  const app = createApp();
  const task = app.task("woken", { args: v.object({}) }, async () => "ok");
  const stop = new AbortController();
  // Polls an hour apart: only a wake-up can start the job within the test.
  const worker = runWorker(app, { db: t.db, slots: 1, minPoll: "1h", maxPoll: "1h", signal: stop.signal, onError: () => {} });
  try {
    await waitFor(async () => (await listeners()).length === 1, "the worker's LISTEN");
    const [first] = await listeners();
    await t.pool.query("select pg_terminate_backend($1)", [first]);
    await waitFor(async () => { const now = await listeners(); return now.length === 1 && now[0] !== first; }, "a new LISTEN", { timeoutMs: 10_000 });
    await task.using(t.db).enqueue({});
    await waitFor(async () => (await t.rows("select state from akadze.all_jobs"))[0]?.state === "succeeded", "the woken job", { timeoutMs: 10_000 });
  } finally {
    stop.abort();
    await within(worker, 5_000, "the worker had not stopped");
  }
});

it("a stopped worker hands its listening connection back to the pool, listening no more, and the next worker listens again", async () => {
  const pool = new pg.Pool({ connectionString: t.url, max: 4 });
  const db = drizzle(pool) as unknown as Db;
  const app = createApp();
  const task = app.task("woken", { args: v.object({}) }, async () => "ok");
  try {
    const stop = new AbortController();
    const worker = runWorker(app, { db, slots: 1, minPoll: "1h", maxPoll: "1h", signal: stop.signal, onError: () => {} });
    await waitFor(async () => (await listeners()).length === 1, "the worker's LISTEN");
    const [listening] = await listeners();
    stop.abort();
    await within(worker, 5_000, "the worker had not stopped");
    // Pooled, not closed: every idle connection of the pool, the one that listened among them, listens to nothing.
    const idle = await Promise.all(Array.from({ length: pool.idleCount }, () => pool.connect()));
    try {
      const sessions = await Promise.all(idle.map(async (c) => (await c.query("select pg_backend_pid() as pid, array(select pg_listening_channels()) as channels")).rows[0]));
      expect(sessions.map((r) => r.pid)).toContain(listening);
      expect(sessions.map((r) => r.channels)).toEqual(sessions.map(() => []));
    } finally {
      for (const c of idle) c.release();
    }
    // A worker started again on the same pool listens and is woken by an enqueue (its polls are an hour apart).
    const again = new AbortController();
    const next = runWorker(app, { db, slots: 1, minPoll: "1h", maxPoll: "1h", signal: again.signal, onError: () => {} });
    try {
      await waitFor(async () => (await listeners()).length === 1, "the next worker's LISTEN");
      await task.using(db).enqueue({});
      await waitFor(async () => (await t.rows("select state from akadze.all_jobs"))[0]?.state === "succeeded", "the woken job", { timeoutMs: 10_000 });
    } finally {
      again.abort();
      await within(next, 5_000, "the next worker had not stopped");
    }
  } finally {
    await pool.end();
  }
});

it("a lane claims before the worker listens, and an enqueue that came before the LISTEN is claimed once it listens, not at the next poll", async () => {
  // Connections whose LISTEN waits for the test: the lane's claims go on meanwhile.
  let openListen!: () => void;
  const listenHeld = new Promise<void>((resolve) => { openListen = resolve; });
  let listenAsked = false;
  class HeldListen extends pg.Client {
    override query(...args: any[]): any {
      if (/^listen /i.test(sentStatement(args).text)) {
        listenAsked = true;
        return listenHeld.then(() => (super.query as any)(...args));
      }
      return (super.query as any)(...args);
    }
  }
  let claimsAnswered = 0;
  class CountedClaims extends pg.Pool {
    override query(...args: any[]): any {
      const sent = (super.query as any)(...args);
      if (isClaim(sentStatement(args).text)) sent.then(() => { claimsAnswered++; }, () => {});
      return sent;
    }
  }
  const pool = new CountedClaims({ connectionString: t.url, max: 4, Client: HeldListen });
  const db = drizzle(pool) as unknown as Db;
  const app = createApp();
  const task = app.task("early", { args: v.object({}) }, async () => "ok");
  const stop = new AbortController();
  // Polls an hour apart: within the test, only a claim that looks again can find the job.
  const worker = runWorker(app, { db, slots: 1, minPoll: "1h", maxPoll: "1h", signal: stop.signal, onError: () => {} });
  try {
    await waitFor(async () => listenAsked && claimsAnswered >= 1, "the lane's first claim, the LISTEN held");
    await task.using(db).enqueue({});
    openListen();
    await waitFor(async () => (await t.rows("select state from akadze.all_jobs"))[0]?.state === "succeeded", "the job enqueued before the LISTEN", { timeoutMs: 10_000 });
  } finally {
    openListen();
    stop.abort();
    await within(worker, 5_000, "the worker had not stopped");
    await pool.end();
  }
});

/** A pool that keeps the text of every claim sent through it. */
class ClaimTexts extends pg.Pool {
  texts: string[] = [];
  override query(...args: any[]): any {
    const { text } = sentStatement(args);
    if (isClaim(text)) this.texts.push(text);
    return (super.query as any)(...args);
  }
}

it("a lane woken for one quick job after another sends one claim text each time, whatever the pace says", async () => {
  const pool = new ClaimTexts({ connectionString: t.url, max: 4 });
  const db = drizzle(pool) as unknown as Db;
  const app = createApp();
  let ran = 0;
  const task = app.task("quick", { args: v.object({}) }, async () => { ran++; });
  const stop = new AbortController();
  // No polls within the test: every claim after the first is sent by a wake-up.
  const worker = runWorker(app, { db, slots: 10, minPoll: "1h", maxPoll: "1h", signal: stop.signal, onError: () => {} });
  try {
    await waitFor(async () => (await listeners()).length === 1, "the worker's LISTEN");
    let afterFirst = 0;
    for (let i = 1; i <= 6; i++) {
      await task.using(db).enqueue({});
      await waitFor(async () => ran === i, `job ${i}`, { timeoutMs: 10_000 });
      // Once a job ran, the lane knows its jobs are quick, and its pace would ask for hundreds.
      if (i === 1) afterFirst = pool.texts.length;
    }
    const woken = pool.texts.slice(afterFirst);
    expect(woken.length).toBeGreaterThanOrEqual(5);
    // The lock limit is written into the claim's text: a size that followed the pace changed it, and Postgres
    // planned each new text afresh. A few slots' worth: 4 x 10 slots, rounded up to a power of two.
    const lockLimits = woken.map((text) => /limit (\d+)\s+for update of j skip locked/.exec(text)?.[1]);
    expect(new Set(lockLimits)).toEqual(new Set(["64"]));
  } finally {
    stop.abort();
    await within(worker, 5_000, "the worker had not stopped");
    await pool.end();
  }
});

it("a lane's claim that answers a wake-up leaves a due recovery to a later claim, unless it is twice RECOVERY_EVERY_MS late", async () => {
  const pool = new ClaimTexts({ connectionString: t.url, max: 4 });
  const db = drizzle(pool) as unknown as Db;
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  let ran = 0;
  const task = app.task("woken", { args: v.object({}) }, async () => { ran++; });
  const stop = new AbortController();
  // No polls within the test: every claim after the first is sent by a wake-up.
  const worker = runWorker(app, { db, slots: 2, minPoll: "1h", maxPoll: "1h", signal: stop.signal, onError: () => {} });
  // (A lane drains: its claims carry recovery's probe, which walks the owners of running jobs as the recovery does.)
  const carriesRecovery = (text: string) => text.includes("with recursive leasing(owner)");
  const wake = async (n: number) => {
    const before = pool.texts.length;
    await task.using(db).enqueue({});
    await waitFor(async () => ran === n, `job ${n}`, { timeoutMs: 10_000 });
    return pool.texts[before];
  };
  try {
    await waitFor(async () => (await listeners()).length === 1, "the worker's LISTEN");
    // The lane's first claim, before any enqueue, carried recovery; RECOVERY_EVERY_MS + 500 ms later it is due.
    await wake(1);
    clock.advance(RECOVERY_EVERY_MS + 500);
    expect(carriesRecovery(await wake(2))).toBe(false);
    clock.advance(RECOVERY_EVERY_MS);
    expect(carriesRecovery(await wake(3))).toBe(true);
  } finally {
    stop.abort();
    await within(worker, 5_000, "the worker had not stopped");
    await pool.end();
  }
});
