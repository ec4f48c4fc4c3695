// A start request the database never answered does not strand its jobs under a live engine: the engine no longer
// holds them, and it puts them back in the queue (attempt refunded) before its next claim, so a worker that lives on
// runs them, each once. (Their lease is the engine's owner row, which the worker's claims keep renewing: it never
// lapses while the worker lives, so recovery would not find them.)
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import pg from "pg";
import * as v from "valibot";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, runWorker, type Db } from "../../src/index.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { deferred } from "../support/deferred.js";
import { asksToStart, sentStatement } from "../support/statements.js";
import { waitFor, within } from "../support/wait-for.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("start_failed"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

/** What the pool below fails: every settle statement that asks to start job `id`, as a connection lost before it was sent. */
const fail = { id: -1, failed: 0 };

class FailStartPool extends pg.Pool {
  override query(...args: any[]): any {
    if (asksToStart(sentStatement(args), fail.id)) {
      fail.failed++;
      return Promise.reject(new Error("Connection terminated unexpectedly"));
    }
    return (super.query as any)(...args);
  }
}

it("a worker whose start request for a prefetched job failed puts the job back and runs it, once", async () => {
  const pool = new FailStartPool({ connectionString: t.url, max: 4 });
  const db = drizzle(pool) as unknown as Db;
  const app = createApp();
  const firstDone = deferred();
  const ran: string[] = [];
  const first = app.task("first", { priority: 10, args: v.object({}) }, async () => { ran.push("first"); await firstDone.promise; });
  const second = app.task("second", { args: v.object({}) }, async () => { ran.push("second"); });
  await first.using(t.db).enqueue({});
  fail.id = await second.using(t.db).enqueue({});
  fail.failed = 0;

  const stop = new AbortController();
  // One slot: `first` starts in the claim, `second` waits prefetched; when `first` ends, a settle asks to start it.
  const worker = runWorker(app, { db, slots: 1, listen: false, signal: stop.signal, onError: () => {} });
  try {
    await waitFor(() => ran.includes("first"), "first's body");
    firstDone.resolve();
    await waitFor(() => fail.failed > 0, "the start request for second", { timeoutMs: 10_000 });
    // Every try of that request fails; the job goes back to the queue, and the worker's next claim takes it.
    await waitFor(() => ran.includes("second"), "second's body, after its start request failed", { timeoutMs: 20_000 });
  } finally {
    stop.abort();
    await within(worker, 15_000, "the worker had not stopped");
    await pool.end();
  }
  expect(fail.failed).toBeGreaterThan(0);
  expect(ran).toEqual(["first", "second"]);
  expect(await t.rows("select task, state, attempt, lease_owner from akadze.all_jobs order by id")).toEqual([
    { task: "first", state: "succeeded", attempt: 1, lease_owner: null },
    { task: "second", state: "succeeded", attempt: 1, lease_owner: null },
  ]);
});
