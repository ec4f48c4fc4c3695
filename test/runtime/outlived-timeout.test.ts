// A body that outlives its timeout (issue 36, item 4). It keeps its slot, its limit place and its lease until it
// actually ends (within a grace: job-runs.ts lingerGraceMs), and the invocation waits for it even past its budget,
// so `maxRunning` never sees more bodies than it allows: its retry does not start beside it.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import * as v from "valibot";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, runOnce, setLimit, type Db } from "../../src/index.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { ManualClock } from "../support/clock.js";
import { abortedOf, deferred } from "../support/deferred.js";
import { BeatPool } from "../support/beat-pool.js";
import { waitFor } from "../support/wait-for.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("outlived_timeout"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });


describe("a body that ignores its timeout", () => {
  it("keeps its maxRunning place past the invocation's budget: its retry never runs beside it", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const gate = deferred();
    const timedOut = deferred();
    let running = 0;
    let mostAtOnce = 0;
    const attempts: number[] = [];
    const slow = app.task("vendor.slow", { timeout: "100ms", maxAttempts: 3, backoff: () => 0, args: v.object({}) }, async (_a, job) => {
      attempts.push(job.attempt);
      running++;
      mostAtOnce = Math.max(mostAtOnce, running);
      try {
        if (job.attempt > 1) return;
        await abortedOf(job.signal);
        timedOut.resolve();
        await gate.promise; // ignores its signal
      } finally { running--; }
    });
    await setLimit(t.db, "vendor", { maxRunning: 1 });
    const [id] = await slow.using(t.db, { limitKey: "vendor" }).enqueueMany([{}]);
    const pool = new BeatPool({ connectionString: t.url, max: 4 });
    let aEnded = false;
    const a = runOnce(app, { db: drizzle(pool) as unknown as Db, now: clock.now, budget: "5s", heartbeat: "100ms" }).finally(() => { aEnded = true; });
    await timedOut.promise;
    clock.advance(10_000); // A's budget is spent while the body still runs
    const beats = pool.beats;
    await waitFor(() => aEnded || pool.beats >= beats + 2, "A to end, or to renew the lingering body's lease twice");
    const b = await runOnce(app, { db: t.db, now: clock.now });
    expect(b.claimed).toBe(0);
    expect(await t.rows("select state, attempt from akadze.jobs where id = $1", [id])).toEqual([{ state: "running", attempt: 1 }]);
    gate.resolve();
    expect(await a).toMatchObject({ retried: 1, abandoned: 0 });
    await pool.end();
    expect(await runOnce(app, { db: t.db, now: clock.now })).toMatchObject({ succeeded: 1 });
    expect(attempts).toEqual([1, 2]);
    expect(mostAtOnce).toBe(1);
  });
});
