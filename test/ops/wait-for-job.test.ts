// waitForJob (issue 39): a caller outside jobs waits for a job's end by polling, on every driver.
import * as v from "valibot";
import { expect, it } from "vitest";
import { createApp, InvalidInput, runOnce, waitForJob, WaitTimeout, type JobDetail } from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";

forEachDriver((h) => {
  function setup() {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const double = app.task("double", { args: v.object({ n: v.number() }), maxAttempts: 1 }, async ({ n }) => {
      if (n < 0) throw new Error("negative");
      return { doubled: n * 2 };
    });
    return { clock, app, double };
  }

  it("resolves with the finished job and its typed result once a run completes it", async () => {
    const { clock, app, double } = setup();
    const id = await double.using(h().db).enqueue({ n: 21 });
    const waiting = waitForJob(h().db, id, { timeout: "50s", pollEvery: "50ms", task: double });
    let settled = false;
    void waiting.then(() => { settled = true; }, () => { settled = true; });
    await Promise.resolve();
    expect(settled).toBe(false); // its first look found the job queued
    await runOnce(app, { db: h().db, now: clock.now });
    const done = await waiting;
    const doubled: number | undefined = done.result?.doubled; // typed from the handler
    expect(doubled).toBe(42);
    expect(done).toMatchObject({ id, task: "double", state: "succeeded", attempt: 1 });
  });

  it("resolves at once for a job that has already finished, whatever way it ended", async () => {
    const { clock, app, double } = setup();
    const failed = await double.using(h().db).enqueue({ n: -1 });
    await runOnce(app, { db: h().db, now: clock.now });
    const done: JobDetail = await waitForJob(h().db, failed, { timeout: "50s" });
    expect(done).toMatchObject({ state: "failed", result: null, errors: [{ message: "negative" }] });
  });

  it("rejects with WaitTimeout naming the state the job is still in, and with the signal's reason when aborted", async () => {
    const { double } = setup();
    const id = await double.using(h().db, { delay: "1h" }).enqueue({ n: 1 });
    const timedOut = await waitForJob(h().db, id, { timeout: "150ms", pollEvery: "50ms" }).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(WaitTimeout);
    expect(timedOut).toMatchObject({ jobId: id, state: "queued", message: `job ${id} is still queued after waiting 150 ms for it to finish` });
    const controller = new AbortController();
    const aborted = waitForJob(h().db, id, { timeout: "50s", pollEvery: "50ms", signal: controller.signal }).catch((e: unknown) => e);
    controller.abort(new Error("the caller left"));
    expect(await aborted).toMatchObject({ message: "the caller left" });
  });

  it("an unknown id, another task's job or bad options are a clear InvalidInput", async () => {
    const { app, double } = setup();
    const other = app.task("other", async () => 1);
    const id = await other.using(h().db).enqueue({});
    const cases: [() => Promise<unknown>, RegExp][] = [
      [() => waitForJob(h().db, 987654, { timeout: "1s" }), /no job 987654: it was never enqueued, or it finished and was pruned/],
      [() => waitForJob(h().db, id, { timeout: "1s", task: double }), /job \d+ is a "other" job, not "double"/],
      [() => waitForJob(h().db, id, {} as never), /give a timeout, such as \{ timeout: "30s" \}/],
      [() => waitForJob(h().db, id, { timeout: "1s", pollEvery: "1ms" }), /pollEvery must be at least 50/],
      [() => waitForJob(h().db, id, { timeout: "1s", every: "1s" } as never), /every/],
      [() => waitForJob(h().db, -1, { timeout: "1s" }), /job id must be positive/],
    ];
    for (const [wait, message] of cases) {
      const error = await wait().then(() => null, (e: unknown) => e);
      expect(error, String(message)).toBeInstanceOf(InvalidInput);
      expect((error as Error).message).toMatch(message);
    }
  });
});
