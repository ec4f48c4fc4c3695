// The invocation after a process's first setLimit claims that key's due jobs (issue 21, item 11): its first claim,
// sent without the limit CTEs (no limit existed when the process last looked), learns one exists and claims again.
import { expect, it } from "vitest";
import * as v from "valibot";
import { createApp, runOnce, setLimit } from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";

forEachDriver((h) => {
  it("the invocation after the process's first setLimit claims that key's due jobs", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const task = app.task("vendor.call", { args: v.object({}) }, async () => "ok");
    // A first invocation learns that no limit exists.
    await task.using(h().db).enqueue({});
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 1 });
    await setLimit(h().db, "vendor", { maxRunning: 5 });
    await task.using(h().db, { limitKey: "vendor" }).enqueueMany([{}, {}, {}]);
    const summary = await runOnce(app, { db: h().db, now: clock.now });
    expect(summary.claimed).toBeGreaterThan(0);
    expect(summary.succeeded).toBe(3);
  });
}, ["node-postgres", "neon-http"]);
