// One lease owner per engine (issue 36, items 1 and 2): of two invocations under one id (a request delivered twice)
// neither puts back or records the other's jobs; and an engine's own claims never recover its own lapsed leases (a body
// that held the event loop, a stalled heartbeat): its heartbeat renews them, only another engine takes them over.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import pg from "pg";
import * as v from "valibot";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, runOnce, type Db } from "../../src/index.js";
import { runWorker } from "../../src/runtime/run-worker.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { ManualClock } from "../support/clock.js";
import { deferred } from "../support/deferred.js";
import { isClaim, sentStatement } from "../support/statements.js";
import { waitFor } from "../support/wait-for.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("lease_owner"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

/** A pool that counts claims and, once `dropNext` is set, loses the answer of the next claim after it committed. */
class ClaimPool extends pg.Pool {
  claims = 0;
  dropNext = false;
  override query(...args: any[]): any {
    const { text } = sentStatement(args);
    if (!isClaim(text)) return (super.query as any)(...args);
    this.claims++;
    const result = (super.query as any)(...args) as Promise<unknown>;
    if (!this.dropNext) return result;
    this.dropNext = false;
    return result.then(() => { throw new Error("Connection terminated unexpectedly"); }); // committed, unanswered
  }
}

/** An app whose `gated` jobs (maxAttempts 1) wait for a gate and log every body that starts. */
function gatedApp(clock: ManualClock) {
  const app = createApp({ clock: clock.now });
  const gate = deferred();
  const runs: number[] = [];
  let running = 0;
  let mostAtOnce = 0;
  const gated = app.task("gated", { maxAttempts: 1, args: v.object({}) }, async (_a, job) => {
    runs.push(job.id);
    running++;
    mostAtOnce = Math.max(mostAtOnce, running);
    try { await gate.promise; } finally { running--; }
  });
  return { app, gate, runs, gated, mostAtOnce: () => mostAtOnce };
}

describe("two invocations under one id (a request delivered twice)", () => {
  it("a lost claim answer in one puts back only its own jobs: the other's bodies run once and their outcomes are recorded", async () => {
    const clock = new ManualClock();
    const a = gatedApp(clock);
    const first = await a.gated.using(t.db).enqueueMany([{}, {}, {}, {}]);
    // B takes the first four and runs them (exactly one batch).
    const b = runOnce(a.app, { db: t.db, id: "dup", slots: 4, batchSize: 4, drain: false, now: clock.now });
    await waitFor(() => a.runs.length === 4, "B's four bodies to start");
    const second = await a.gated.using(t.db).enqueueMany([{}, {}, {}, {}]);
    // A, under the same id: its first claim commits and its answer is lost, so before it claims again it puts
    // back what its owner holds unknown to it. Under a shared owner that was B's running jobs too.
    const pool = new ClaimPool({ connectionString: t.url, max: 4 });
    pool.dropNext = true;
    const errors: unknown[] = [];
    const aRun = runOnce(a.app, { db: drizzle(pool) as unknown as Db, id: "dup", slots: 8, batchSize: 8, now: clock.now, fanOut: undefined });
    await waitFor(() => a.runs.length >= 8, "A's bodies to start after its lost claim");
    a.gate.resolve();
    const [sb, sa] = await Promise.all([b, aRun.catch((e) => { errors.push(e); throw e; })]);
    await pool.end();
    expect(errors).toEqual([]);
    expect([...a.runs].sort((x, y) => x - y)).toEqual([...first, ...second]); // every job ran once
    expect(a.mostAtOnce()).toBe(8);
    expect(sb).toMatchObject({ succeeded: 4, lost: 0, released: 0 });
    expect(sa).toMatchObject({ succeeded: 4, lost: 0 });
    expect(await t.rows("select state, attempt, count(*)::int as n from akadze.all_jobs group by 1, 2")).toEqual([{ state: "succeeded", attempt: 1, n: 8 }]);
  });

  it("each engine leases under a token of its own, and the registry still finds the invocation by its id", async () => {
    const clock = new ManualClock();
    const a = gatedApp(clock);
    await a.gated.using(t.db).enqueueMany([{}]);
    const run = runOnce(a.app, { db: t.db, id: "inv-token", now: clock.now });
    await waitFor(() => a.runs.length === 1, "the body to start");
    const [{ lease_owner }] = await t.rows("select lease_owner from akadze.jobs");
    expect(lease_owner).toMatch(/^inv-token#[0-9a-f-]{13}$/);
    const [worker] = await t.rows("select held from akadze.workers w, lateral (select count(*)::int as held from akadze.jobs j where starts_with(j.lease_owner, w.id || '#')) h");
    expect(worker).toEqual({ held: 1 });
    a.gate.resolve();
    expect(await run).toMatchObject({ succeeded: 1 });
  });
});

describe("a live engine whose own leases lapsed", () => {
  it("keeps them: its own claims never recover them, each body runs once and its outcome is recorded", async () => {
    const clock = new ManualClock();
    const a = gatedApp(clock);
    const quick = a.app.task("quick", { maxAttempts: 1, args: v.object({}) }, async (_x, job) => { a.runs.push(job.id); });
    const [blockId] = await a.gated.using(t.db).enqueueMany([{}]);
    const [quickId] = await quick.using(t.db).enqueueMany([{}]);
    const pool = new ClaimPool({ connectionString: t.url, max: 6 });
    const stop = new AbortController();
    const errors: unknown[] = [];
    // One slot: `gated` runs, `quick` waits in the local queue (prefetched, not started).
    const worker = runWorker(a.app, { db: drizzle(pool) as unknown as Db, slots: 1, minPoll: "10ms", maxPoll: "20ms", listen: false, signal: stop.signal, onError: (e) => errors.push(e) });
    await waitFor(() => a.runs.includes(blockId), "the gated body");
    // Every lease of the worker lapses (30 s) while the clock stands far ahead; its claims go on.
    clock.advance(60_000);
    const claimsThen = pool.claims;
    await waitFor(() => pool.claims >= claimsThen + 3, "three more claims of the same worker");
    expect(await t.rows("select task, state, attempt, started_at is not null as started from akadze.jobs order by id")).toEqual([
      { task: "gated", state: "running", attempt: 1, started: true }, { task: "quick", state: "running", attempt: 1, started: false }]);
    a.gate.resolve();
    await waitFor(async () => (await t.rows("select count(*)::int as n from akadze.all_jobs where state = 'succeeded'"))[0].n === 2, "both jobs to succeed");
    stop.abort();
    await worker;
    await pool.end();
    expect(errors.map(String)).toEqual([]);
    expect(a.runs).toEqual([blockId, quickId]);
    expect(await t.rows("select task, state, attempt, jsonb_array_length(errors) as errors from akadze.all_jobs order by id")).toEqual([
      { task: "gated", state: "succeeded", attempt: 1, errors: 0 }, { task: "quick", state: "succeeded", attempt: 1, errors: 0 }]);
  });
});
