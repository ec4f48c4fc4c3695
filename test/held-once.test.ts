// An engine never holds one job twice (issue 21, item 1): when a live engine's own leases lapse (a body
// held the event loop, a heartbeat stalled) and one of its claims recovers them, a later claim of the same
// engine may hand the same jobs back. The engine merges them with what it holds: a job waiting in its local
// queue is replaced by the new claim, a job whose body still runs keeps that one body, and that body's outcome
// is recorded even when its settle ran before the claim that took the job back had committed.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import pg from "pg";
import * as v from "valibot";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, type Db } from "../src/index.js";
import { runWorker } from "../src/runtime/run-worker.js";
import { openTestDatabase, type TestDatabase } from "./support/database.js";
import { ManualClock } from "./support/clock.js";
import { deferred } from "./support/deferred.js";
import { isSettle, sentStatement } from "./support/statements.js";
import { waitFor } from "./support/wait-for.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("held_once"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

/** A worker app on a manual clock: `block` waits for its gate, `quick` counts its runs; both log what they see. */
function leaseApp(blockAttempts: number) {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  const gate = deferred();
  const blockStarted = deferred();
  const runs: { task: string; id: number; attempt: number }[] = [];
  let running = 0;
  let mostAtOnce = 0;
  const body = async (task: string, id: number, attempt: number, wait?: Promise<void>) => {
    runs.push({ task, id, attempt });
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    try { if (wait) await wait; } finally { running--; }
  };
  const block = app.task("block", { maxAttempts: blockAttempts, priority: 10, args: v.object({}) }, async (_a, job) => {
    blockStarted.resolve();
    await body("block", job.id, job.attempt, gate.promise);
  });
  const quick = app.task("quick", { maxAttempts: 1, args: v.object({}) }, async (_a, job) => { await body("quick", job.id, job.attempt); });
  // Each claim of a job shows as a queued -> running transition.
  const claims = new Map<number, number>();
  app.hooks.onTransition((tr) => { if (tr.to === "running") claims.set(tr.jobId, (claims.get(tr.jobId) ?? 0) + 1); });
  return { app, clock, gate, blockStarted, runs, block, quick, claims, mostAtOnce: () => mostAtOnce };
}

describe("a live engine whose own leases lapsed", () => {
  it("runs a prefetched job it claimed again once, not twice (maxAttempts 1)", async () => {
    const a = leaseApp(1);
    await a.block.using(t.db).enqueue({});
    const [quickId] = await a.quick.using(t.db).enqueueMany([{}]);
    const errors: unknown[] = [];
    const stop = new AbortController();
    // One slot: `block` runs, `quick` waits in the local queue (prefetched, not started).
    const worker = runWorker(a.app, { db: t.db, slots: 1, minPoll: "10ms", maxPoll: "20ms", listen: false, signal: stop.signal, onError: (e) => errors.push(e) });
    await a.blockStarted.promise;
    await waitFor(() => a.claims.get(quickId!) === 1, "quick's first claim");
    // Every lease of the worker lapses (30 s): its next claim recovers them, a later one hands `quick` back.
    a.clock.advance(60_000);
    await waitFor(() => (a.claims.get(quickId!) ?? 0) >= 2, "quick claimed again by the same worker");
    a.gate.resolve();
    await waitFor(async () => (await t.rows("select state from akadze.all_jobs where id = $1", [quickId]))[0].state === "succeeded", "quick's success");
    stop.abort();
    await worker;
    expect(errors.map(String)).toEqual([]);
    expect(a.runs.filter((r) => r.task === "quick")).toEqual([{ task: "quick", id: quickId, attempt: 1 }]);
    expect(await t.rows("select task, state, attempt from akadze.all_jobs order by id")).toEqual([
      { task: "block", state: "failed", attempt: 1 }, { task: "quick", state: "succeeded", attempt: 1 }]);
  });

  it("keeps one body of a running job it claimed again, and records that body's outcome", async () => {
    const a = leaseApp(2);
    const [blockId] = await a.block.using(t.db).enqueueMany([{}]);
    const errors: unknown[] = [];
    const stop = new AbortController();
    // Two slots: the claim that hands `block` back may start it at once in the free one.
    const worker = runWorker(a.app, { db: t.db, slots: 2, minPoll: "10ms", maxPoll: "20ms", listen: false, signal: stop.signal, onError: (e) => errors.push(e) });
    await a.blockStarted.promise;
    // The lease lapses and is recovered (attempt 1 spent, LeaseExpired, backoff up to 1 s); past the backoff the
    // same worker claims it again while the first body still runs.
    a.clock.advance(60_000);
    await waitFor(async () => (await t.rows("select state from akadze.all_jobs where id = $1", [blockId]))[0].state === "queued", "block recovered");
    a.clock.advance(5_000);
    await waitFor(() => (a.claims.get(blockId!) ?? 0) >= 2, "block claimed again by the same worker");
    a.gate.resolve();
    await waitFor(async () => (await t.rows("select state from akadze.all_jobs where id = $1", [blockId]))[0].state === "succeeded", "block's success");
    stop.abort();
    await worker;
    expect(errors.map(String)).toEqual([]);
    expect(a.mostAtOnce()).toBe(1);
    expect(a.runs).toEqual([{ task: "block", id: blockId, attempt: 1 }]);
  });

  it("records the first body's outcome when its settle ran before the claim that took the job back committed", async () => {
    // Over a session the claim's transition hooks run inside its transaction: here the hook of the claim that
    // takes `block` back lets the first body end and holds the claim uncommitted until the settle of that
    // body's outcome was answered. The settle found the job queued (not this owner's); the engine must send the
    // outcome again under the new lease, not run the job a second time.
    const a = leaseApp(3);
    const settled = deferred();
    let blockId = -1;
    class NotingClient extends pg.Client {
      override query(...args: any[]): any {
        const { text, values } = sentStatement(args);
        if (!isSettle(text) || !values.includes(JSON.stringify([blockId]))) return (super.query as any)(...args);
        // Called with a callback (a pool's own query) or for a promise (a transaction's statement).
        const callback = args.at(-1);
        if (typeof callback === "function") {
          return (super.query as any)(...args.slice(0, -1), (error: unknown, answer: unknown) => { callback(error, answer); settled.resolve(); });
        }
        const result = (super.query as any)(...args);
        result.then(() => settled.resolve(), () => settled.resolve());
        return result;
      }
    }
    const pool = new pg.Pool({ connectionString: t.url, max: 6, Client: NotingClient });
    const db = drizzle(pool) as unknown as Db;
    let claimsOfBlock = 0;
    a.app.hooks.onTransition(async (tr) => {
      if (tr.jobId !== blockId || tr.to !== "running" || ++claimsOfBlock !== 2) return;
      a.gate.resolve();
      await settled.promise;
    });
    [blockId] = await a.block.using(db).enqueueMany([{}]);
    const errors: unknown[] = [];
    const stop = new AbortController();
    const worker = runWorker(a.app, { db, slots: 2, minPoll: "10ms", maxPoll: "20ms", listen: false, signal: stop.signal, onError: (e) => errors.push(e) });
    try {
      await a.blockStarted.promise;
      a.clock.advance(60_000);
      await waitFor(async () => (await t.rows("select state from akadze.all_jobs where id = $1", [blockId]))[0].state === "queued", "block recovered");
      a.clock.advance(5_000);
      await waitFor(async () => (await t.rows("select state from akadze.all_jobs where id = $1", [blockId]))[0].state === "succeeded", "block's success");
    } finally {
      stop.abort();
      await worker;
      await pool.end();
    }
    expect(errors.map(String)).toEqual([]);
    expect(claimsOfBlock).toBe(2);
    expect(a.runs).toEqual([{ task: "block", id: blockId, attempt: 1 }]);
    const [row] = await t.rows("select state, attempt, errors from akadze.all_jobs where id = $1", [blockId]);
    expect([row.state, row.attempt, row.errors.map((e: { kind: string }) => e.kind)]).toEqual(["succeeded", 2, ["LeaseExpired"]]);
  });
});
