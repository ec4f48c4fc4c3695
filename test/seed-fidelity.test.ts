// Issue 14: the behaviours where the seed documents and the first release differed, on every driver.
import { describe, expect, it } from "vitest";
import * as v from "valibot";
import { createApp, DuplicateJob, InvalidInput, requeue, runOnce, type App } from "../src/index.js";
import { forEachDriver } from "./support/drivers.js";
import { ManualClock } from "./support/clock.js";

function setup() {
  const clock = new ManualClock();
  return { clock, app: createApp({ clock: clock.now }) };
}

forEachDriver((h) => {
  const run = (app: App, clock: ManualClock, extra: object = {}) => runOnce(app, { db: h().db, now: clock.now, ...extra });
  const job = async (id: number) =>
    (await h().rows(`select id, state, attempt, result, errors, run_at, finished_at from akadze.jobs where id = ${id}`))[0];

  describe("messages", () => {
    it("ResultNotJson names a cycle and where it is, not 'a Object'", async () => {
      const { app, clock } = setup();
      const id = await app.task("loop", async () => { const o: any = { list: [] }; o.list.push(o); return o; }).using(h().db).enqueue({});
      await run(app, clock);
      const [entry] = (await job(id)).errors;
      expect(entry.kind).toBe("ResultNotJson");
      expect(entry.message).toBe("task loop returned a value that is not JSON: a cycle at .list[0] (an object that contains itself)");
    });

    it("enqueueMany with one uniqueKey for several jobs is refused as bad input, and nothing is written", async () => {
      const { app } = setup();
      const task = app.task("welcome", { args: v.object({ userId: v.number() }) }, async () => {});
      const error = await task.using(h().db, { uniqueKey: "welcome" }).enqueueMany([{ userId: 1 }, { userId: 2 }]).catch((e) => e);
      expect(error).toBeInstanceOf(InvalidInput);
      expect(error.message).toContain('uniqueKey "welcome" would be shared by all 2 jobs of this enqueueMany call');
      expect(error.message).not.toContain("already queued or running");
      expect(await h().rows("select id from akadze.jobs")).toEqual([]);
      expect(await task.using(h().db, { uniqueKey: "welcome" }).enqueueMany([{ userId: 1 }])).toHaveLength(1);
    });

    it("requeue clashing with an active job's uniqueKey names that key and leaves the job failed", async () => {
      const { app, clock } = setup();
      const task = app.task("report", { maxAttempts: 1 }, async () => { throw new Error("down"); });
      const first = await task.using(h().db, { uniqueKey: "report-7" }).enqueue({});
      await run(app, clock);
      expect((await job(first)).state).toBe("failed");
      await task.using(h().db, { uniqueKey: "report-7" }).enqueue({});
      const error = await requeue(h().db, first).catch((e) => e);
      expect(error).toBeInstanceOf(DuplicateJob);
      expect(error.uniqueKey).toBe("report-7");
      expect(error.message).toBe('a job with uniqueKey "report-7" is already queued or running');
      expect((await job(first)).state).toBe("failed");
    });
  });
});
