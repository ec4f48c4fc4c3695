// The invocation budget, through the work route: jobs whose timeout no longer fits are not started
// and go back to `queued` with their attempt unspent, for the next invocation.
import { expect, it } from "vitest";
import { Hono } from "hono";
import { createApp } from "akadze";
import { akadzeRoutes } from "akadze/hono";
import { forEachDriver } from "./support/drivers.js";
import { ManualClock } from "./support/clock.js";

const SECRET = "budget-test";

forEachDriver((h) => {
  it("jobs that cannot start inside the budget go back to queued with attempts unspent, and the next invocation runs them", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const started: number[] = [];
    // Each run takes its whole declared timeout of 3 s on the manual clock.
    const slow = app.task("slow", { timeout: "3s" }, async (_args, job) => { started.push(job.id); clock.advance(3_000); });
    const ids = await slow.using(h().db).enqueueMany([{}, {}, {}, {}, {}]);
    const web = new Hono().route("/akadze", akadzeRoutes(app, { db: h().db, secret: SECRET }));
    const work = async () => (await web.fetch(new Request("http://test/akadze/work", {
      method: "POST", headers: { authorization: `Bearer ${SECRET}` }, body: JSON.stringify({ slots: 1, budget: "10s" }),
    }))).json();

    // Starts at 0, 3 and 6 s fit a 10 s budget; at 9 s only 1 s is left, less than a 3 s timeout.
    expect(await work()).toMatchObject({ claimed: 5, succeeded: 3, released: 2, retried: 0, failed: 0 });
    expect(started).toEqual(ids.slice(0, 3));
    const jobs = await h().rows(`select id, state, attempt, errors from akadze.all_jobs order by id`);
    expect(jobs.map((j) => j.state)).toEqual(["succeeded", "succeeded", "succeeded", "queued", "queued"]);
    expect(jobs.slice(3)).toEqual([
      { id: ids[3], state: "queued", attempt: 0, errors: [] },
      { id: ids[4], state: "queued", attempt: 0, errors: [] },
    ]);

    expect(await work()).toMatchObject({ claimed: 2, succeeded: 2, released: 0 });
    expect(started).toEqual(ids);
    expect(await h().rows(`select state, attempt from akadze.all_jobs order by id`)).toEqual(Array(5).fill({ state: "succeeded", attempt: 1 }));
  });
}, ["node-postgres", "neon-http"]);
