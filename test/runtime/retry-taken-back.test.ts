// A job whose retry is due at once, taken back by its own engine's claim while the settle that requeued it was on its
// way (its answer held back, or lost and the settle tried again), runs again soon with its first attempt charged once:
// it neither sits out its lease to be charged again by recovery, nor has the first run's error recorded on the second.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import pg from "pg";
import * as v from "valibot";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, type Db } from "../../src/index.js";
import { runWorker } from "../../src/runtime/run-worker.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { ManualClock } from "../support/clock.js";
import { deferred } from "../support/deferred.js";
import { isClaim, isSettle, sentStatement } from "../support/statements.js";
import { waitFor } from "../support/wait-for.js";

// The claim's copy is not queued (the outcome was on its way), so no body holds that run; it is leased to the engine
// all the same. It is parked behind the outcome on its way and runs once that is answered (the "parked" rows of
// test/runtime/job-life.test.ts). The manual clock never moves here, so no lease can expire: only the engine itself
// can put the job back.

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("retry_taken_back"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

/**
 * For the first settle that records job `id`'s error: `held`, its answer (the statement runs and commits) is
 * held back; `lost`, its answer is lost after it committed, and the settler's next try is held before it is
 * sent. Either waits until the claim that hands the job back was answered and the lane sent its next claim
 * (so the engine has handled that answer).
 */
const hold = { mode: "held" as "held" | "lost", id: -1, settleSeen: false, settleAnswered: false, takenBack: false, claimsSentAfter: 0, gate: deferred() };

class HoldSettlePool extends pg.Pool {
  override query(...args: any[]): any {
    const { text, values } = sentStatement(args);
    const claim = isClaim(text);
    const recordsError = isSettle(text) && values.some((x) => typeof x === "string" && x.includes(`"id":${hold.id},"kind":"error"`));
    if (claim && hold.takenBack && ++hold.claimsSentAfter === 1) hold.gate.resolve();
    if (recordsError && hold.mode === "lost" && hold.settleSeen && !hold.settleAnswered) {
      // The settler's next try: sent once the claim has taken the job back.
      return hold.gate.promise.then(() => (super.query as any)(...args)).finally(() => { hold.settleAnswered = true; });
    }
    const result = (super.query as any)(...args) as Promise<{ rows: { r: unknown }[] }>;
    if (!claim && !recordsError) return result;
    return result.then(async (answer) => {
      if (recordsError && !hold.settleSeen) {
        hold.settleSeen = true;
        if (hold.mode === "lost") throw new Error("Connection terminated unexpectedly"); // committed, unanswered
        await hold.gate.promise;
        hold.settleAnswered = true;
      } else if (claim && hold.settleSeen && !hold.takenBack && JSON.stringify(answer.rows?.[0]?.r ?? null).includes(`[${hold.id},"flaky"`)) {
        hold.takenBack = true;
      }
      return answer;
    });
  }
}

describe("a job whose retry was due at once, taken back by a claim while the settle that requeued it was on its way", () => {
  for (const mode of ["held", "lost"] as const) {
  it(mode === "held" ? "runs again without waiting for its lease when the claim is answered before the settle"
    : "runs again once, its first attempt charged once, when the settle's answer was lost and its retry came after the claim", async () => {
    Object.assign(hold, { mode, id: -1, settleSeen: false, settleAnswered: false, takenBack: false, claimsSentAfter: 0, gate: deferred() });
    const pool = new HoldSettlePool({ connectionString: t.url, max: 6 });
    const db = drizzle(pool) as unknown as Db;
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const runs: number[] = [];
    const flaky = app.task("flaky", { maxAttempts: 3, backoff: () => 0, args: v.object({}) }, async (_a, job) => {
      runs.push(job.attempt);
      if (job.attempt === 1) throw new Error("first try fails");
    });
    const [id] = await flaky.using(db).enqueueMany([{}]);
    hold.id = id;
    const stop = new AbortController();
    const errors: unknown[] = [];
    const worker = runWorker(app, { db, slots: 2, minPoll: "10ms", maxPoll: "20ms", listen: false, signal: stop.signal, onError: (e) => errors.push(e) });
    try {
      await waitFor(() => hold.takenBack, "a claim that takes the requeued job back while the settle is on its way", { timeoutMs: 30_000 });
      await waitFor(() => hold.settleAnswered, "the settle's answer (or its retry's), after the lane's next claim", { timeoutMs: 30_000 });
      await waitFor(async () => (await t.rows("select state from akadze.all_jobs where id = $1", [id]))[0]?.state === "succeeded",
        "the job's second run, with the clock standing still (no lease can expire)", { timeoutMs: 30_000 });
    } finally {
      hold.gate.resolve();
      stop.abort();
    }
    const summary = await worker;
    await pool.end();
    expect(errors.map(String)).toEqual([]);
    expect(runs).toEqual([1, 2]);
    const [row] = await t.rows<{ state: string; attempt: number; errors: { kind: string; message: string }[] }>(
      "select state, attempt, errors from akadze.all_jobs where id = $1", [id]);
    expect({ state: row.state, attempt: row.attempt }).toEqual({ state: "succeeded", attempt: 2 });
    // One error, the first run's: not a LeaseExpired from recovery, and no attempt spent on a run no body made.
    expect(row.errors.map((e) => e.message)).toEqual(["first try fails"]);
    // The claim's copy waited for the settle's answer (one job, one life: job-life.ts), then ran; nothing was put back.
    expect(summary.released).toBe(0);
  });
  }
});
