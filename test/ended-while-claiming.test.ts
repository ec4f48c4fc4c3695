// An engine never runs a job twice beside itself (issue 21's rule; a race found under load this session): the
// job's lease lapsed and was recovered, the same engine's next claim took it back while the first body still
// ran, and that body ended before the claim's answer arrived. The settle of the first body's outcome finished
// the row the claim had taken (same owner), so the claimed copy is stale. Whether the claim's answer comes
// after the settle's answer or while the settle is on its way, the engine must not run the job again.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import pg from "pg";
import * as v from "valibot";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, type Db } from "../src/index.js";
import { runWorker } from "../src/runtime/run-worker.js";
import { openTestDatabase, type TestDatabase } from "./support/database.js";
import { ManualClock } from "./support/clock.js";
import { deferred } from "./support/deferred.js";
import { isClaim, isSettle, sentStatement } from "./support/statements.js";
import { waitFor } from "./support/wait-for.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("ended_claiming"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

/**
 * Once armed, the pool below holds back the answer (the statement itself runs and commits) of the first claim
 * that hands job `id` back, and, if `holdSettle`, of the first settle that records it, until their gates open.
 */
const hold = { armed: false, id: -1, holdSettle: false, claim: deferred(), claimSeen: false, settle: deferred(), settleSeen: false, settleAnswered: false, claimsAfter: 0 };

class HoldAnswerPool extends pg.Pool {
  override query(...args: any[]): any {
    const { text, values } = sentStatement(args);
    const claim = isClaim(text);
    const settle = isSettle(text) && values.includes(JSON.stringify([hold.id]));
    const result = (super.query as any)(...args) as Promise<{ rows: { r: unknown }[] }>;
    if (!hold.armed || (!claim && !settle)) return result;
    return result.then(async (answer) => {
      if (settle) {
        if (hold.holdSettle && !hold.settleSeen) { hold.settleSeen = true; await hold.settle.promise; }
        hold.settleAnswered = true;
      } else if (!hold.claimSeen && JSON.stringify(answer.rows?.[0]?.r ?? null).includes(`[${hold.id},"block"`)) {
        hold.claimSeen = true;
        await hold.claim.promise;
      } else if (hold.claimSeen) hold.claimsAfter++;
      return answer;
    });
  }
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("a job whose lease lapsed, taken back by the same engine's claim while its first body ended", () => {
  for (const settleOnItsWay of [false, true]) {
    it(`runs once when the claim's answer comes ${settleOnItsWay ? "while the first body's settle is on its way" : "after the first body's settle was answered"}`, async () => {
      Object.assign(hold, { armed: false, id: -1, holdSettle: settleOnItsWay, claim: deferred(), claimSeen: false, settle: deferred(), settleSeen: false, settleAnswered: false, claimsAfter: 0 });
      const pool = new HoldAnswerPool({ connectionString: t.url, max: 6 });
      const db = drizzle(pool) as unknown as Db;
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      const gate = deferred();
      const started = deferred();
      const runs: number[] = [];
      const block = app.task("block", { maxAttempts: 3, args: v.object({}) }, async (_a, job) => {
        runs.push(job.attempt);
        started.resolve();
        await gate.promise;
      });
      const [id] = await block.using(db).enqueueMany([{}]);
      hold.id = id;
      const stop = new AbortController();
      const errors: unknown[] = [];
      const worker = runWorker(app, { db, slots: 2, minPoll: "10ms", maxPoll: "20ms", listen: false, signal: stop.signal, onError: (e) => errors.push(e) });
      try {
        await started.promise;
        hold.armed = true;
        // The lease lapses and a claim recovers the job (backoff up to 1 s); past it the same worker claims it again.
        clock.advance(60_000);
        await waitFor(async () => (await t.rows("select state from akadze.all_jobs where id = $1", [id]))[0]?.state === "queued", "the job recovered");
        clock.advance(5_000);
        // That claim committed (the job is running under the worker's lease again); its answer waits.
        await waitFor(() => hold.claimSeen, "the claim that takes the job back", { timeoutMs: 30_000 });
        gate.resolve(); // the first body ends: its outcome is settled under the same owner, on the row the claim took
        if (settleOnItsWay) await waitFor(() => hold.settleSeen, "the first body's settle committed, its answer held", { timeoutMs: 30_000 });
        else await waitFor(() => hold.settleAnswered, "the first body's settle answered", { timeoutMs: 30_000 });
        await turn();
        hold.claim.resolve();
        // Two more claims answered: the engine has handled the stale copy (a second run would have started by then).
        await waitFor(() => hold.claimsAfter >= 2, "two claims after the held one", { timeoutMs: 30_000 });
        hold.settle.resolve();
        await waitFor(async () => (await t.rows("select state from akadze.all_jobs where id = $1", [id]))[0]?.state === "succeeded", "the job's success");
      } finally {
        gate.resolve();
        hold.claim.resolve();
        hold.settle.resolve();
        stop.abort();
        await worker;
        await pool.end();
      }
      expect(errors.map(String)).toEqual([]);
      expect(runs).toEqual([1]);
      expect(await t.rows("select state, attempt from akadze.all_jobs where id = $1", [id])).toEqual([{ state: "succeeded", attempt: 2 }]);
    });
  }
});
