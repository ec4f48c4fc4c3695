// Typed results (issue 25): what a task's handler returns is the type its result is read back as, by
// getJob(db, id, task) and a workflow's step.invoke / step.runJobs, with nothing written at the call site.
// The type assertions are checked by `tsc --noEmit -p .` (test/ is in the project); the runs by vitest.
import { afterAll, beforeAll, beforeEach, describe, expect, expectTypeOf, it } from "vitest";
import * as v from "valibot";
import { createApp, getJob, InvalidInput, runOnce, Task, type ChildJob, type JobDetail } from "../../src/index.js";
import { ManualClock } from "../support/clock.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";

/** What a task handle's results are read back as. */
type ResultOf<T> = T extends Task<any, infer R> ? R : never;

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("typed_results"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

describe("typed task results", () => {
  it("getJob given the task reads the result as the task's handler returns it", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const report = app.task("report.build", { args: v.object({ month: v.string() }) }, async ({ month }) => ({ url: `r-${month}.pdf`, pages: 3 }));
    const id = await report.using(t.db).enqueue({ month: "2026-05" });
    await runOnce(app, { db: t.db, now: clock.now });
    const job = await getJob(t.db, id, report);
    expectTypeOf(job).toEqualTypeOf<JobDetail<{ url: string; pages: number }> | null>();
    expect(job?.result?.url).toBe("r-2026-05.pdf");
    // Without the task the result is what it always was.
    expectTypeOf((await getJob(t.db, id))!.result).toEqualTypeOf<unknown>();
  });

  it("a job is not read as another task's, whose result type it does not have", async () => {
    const app = createApp();
    const count = app.task("count", () => 7);
    const other = app.task("other", async () => "x");
    const id = await count.using(t.db).enqueue({});
    await expect(getJob(t.db, id, other)).rejects.toThrow(InvalidInput);
    await expect(getJob(t.db, id, other)).rejects.toThrow(`job ${id} is a "count" job, not "other"`);
    expect((await getJob(t.db, id, count))?.result).toBeNull(); // not run yet
  });

  it("the common case writes no types: handles keep their args' type and go where a Task is asked for", () => {
    const app = createApp();
    const Args = v.object({ userId: v.number() });
    const send = app.task("mail.send", { args: Args }, async ({ userId }) => { void userId; });
    const handle: Task<typeof Args> = send; // a handle annotated the old way still fits
    expectTypeOf(handle.using(t.db).enqueue).parameter(0).toEqualTypeOf<{ userId: number }>();
    expectTypeOf(send).toEqualTypeOf<Task<typeof Args, void>>();
    expectTypeOf<ResultOf<typeof send>>().toEqualTypeOf<void>();
    const sync = app.task("sync", () => 1);
    expectTypeOf<ResultOf<typeof sync>>().toEqualTypeOf<number>();
    const tick = app.periodic("tick", { every: "1m" }, async () => ({ ok: true }));
    expectTypeOf<ResultOf<typeof tick>>().toEqualTypeOf<{ ok: boolean }>();
  });

  it("a workflow's step.invoke and step.runJobs give each child's result typed, and the workflow's own result is typed too", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const resize = app.task("image.resize", { args: v.object({ width: v.number() }) }, async ({ width }) => `img-${width}.png`);
    const album = app.workflow("album.publish", async (_args, step) => {
      const sizes = await step.runJobs("sizes", resize, [{ width: 100 }, { width: 800 }], { poll: "5s" });
      expectTypeOf(sizes).toEqualTypeOf<ChildJob<string>[]>();
      const cover = await step.invoke("cover", resize, { width: 1200 }, { poll: "5s" });
      expectTypeOf(cover).toEqualTypeOf<string>();
      return { cover, sizes: sizes.map((c) => c.result) };
    });
    const id = await album.using(t.db).enqueue({});
    for (let tick = 0; tick < 8 && (await getJob(t.db, id))?.state !== "succeeded"; tick++) {
      await runOnce(app, { db: t.db, now: clock.now, budget: "1h" });
      clock.advance(5_000);
    }
    const done = await getJob(t.db, id, album);
    expectTypeOf(done!.result).toEqualTypeOf<{ cover: string; sizes: (string | null)[] } | null>();
    expect(done).toMatchObject({ state: "succeeded", result: { cover: "img-1200.png", sizes: ["img-100.png", "img-800.png"] } });
  });
});
