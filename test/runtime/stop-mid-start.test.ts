// An invocation that stops while a start request is on its way (issue 21): the jobs it asked to start are
// released only once the answer says what became of them. A job the answer denies (its limit was full) is
// back in the queue table already, so releasing it too would count an outcome as lost that never was.
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import pg from "pg";
import * as v from "valibot";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, runOnce, setLimit, type Db } from "../../src/index.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { deferred } from "../support/deferred.js";
import { asksToStart, sentStatement } from "../support/statements.js";
import { waitFor } from "../support/wait-for.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("stop_mid_start"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

/** What the pool below holds back: the settle statement that asks to start job `id`, until `open` resolves. */
const hold = { id: -1, seen: false, open: deferred() };

class HoldStartPool extends pg.Pool {
  override query(...args: any[]): any {
    if (asksToStart(sentStatement(args), hold.id)) {
      hold.seen = true;
      return hold.open.promise.then(() => (super.query as any)(...args));
    }
    return (super.query as any)(...args);
  }
}

it("a job whose start was denied while the invocation stopped is released once, not counted lost", async () => {
  const pool = new HoldStartPool({ connectionString: t.url, max: 4 });
  const db = drizzle(pool) as unknown as Db;
  const app = createApp();
  const firstDone = deferred();
  const ran: string[] = [];
  const first = app.task("first", { priority: 10, args: v.object({}) }, async () => { ran.push("first"); await firstDone.promise; });
  const limited = app.task("limited", { args: v.object({}) }, async () => { ran.push("limited"); });
  await setLimit(t.db, "one", { maxRunning: 1 });
  await first.using(t.db).enqueue({});
  hold.id = await limited.using(t.db, { limitKey: "one" }).enqueue({});

  const stop = new AbortController();
  // One slot: `first` starts in the claim, `limited` waits prefetched; when `first` ends, a settle asks to start it.
  const invocation = runOnce(app, { db, slots: 1, batchSize: 10, budget: "1h", signal: stop.signal });
  await waitFor(() => ran.includes("first"), "first's body");
  firstDone.resolve();
  await waitFor(() => hold.seen, "the start request", { timeoutMs: 10_000 });
  // While that request is held back, the limit's only slot is locked elsewhere (so the start is denied) and the invocation stops.
  const locker = await t.pool.connect();
  try {
    await locker.query("begin");
    await locker.query("select * from akadze.limit_slots where key = 'one' for update");
    stop.abort();
    await new Promise((resolve) => setImmediate(resolve)); // one turn: the engine sees the abort before the answer
    hold.open.resolve();
    const summary = await invocation;
    expect(summary).toMatchObject({ claimed: 2, succeeded: 1, released: 1, lost: 0, unconfirmed: 0 });
  } finally {
    await locker.query("rollback");
    locker.release();
    await pool.end();
  }
  expect(ran).toEqual(["first"]);
  expect(await t.rows("select task, state, attempt, lease_owner from akadze.all_jobs order by id")).toEqual([
    { task: "first", state: "succeeded", attempt: 1, lease_owner: null },
    { task: "limited", state: "queued", attempt: 0, lease_owner: null },
  ]);
});
