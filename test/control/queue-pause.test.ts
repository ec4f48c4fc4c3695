// Queue pause and resume (SPEC §2 "Queues"), cluster-wide, on node-postgres and neon-http.
import { describe, expect, it } from "vitest";
import { createApp, InvalidInput, pauseQueue, resumeQueue, runOnce } from "../../src/index.js";
import { forEachDriver, openDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { deferred } from "../support/deferred.js";
import { waitFor } from "../support/wait-for.js";

forEachDriver((h) => {
  const queued = async (queue: string) =>
    (await h().rows<{ n: number }>(`select count(*)::int as n from akadze.all_jobs where queue = '${queue}' and state = 'queued'`))[0].n;

  it("a paused queue is not claimed by 8 concurrent invocations, other queues are, and after resume it drains", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    const mail = app.task("mail.send", { queue: "mail" }, async () => { ran.push("mail"); });
    const report = app.task("report.build", async () => { ran.push("default"); });
    await mail.using(h().db).enqueueMany(Array.from({ length: 40 }, () => ({})));
    await report.using(h().db).enqueueMany(Array.from({ length: 10 }, () => ({})));

    await pauseQueue(h().db, "mail");
    const paused = await Promise.all(Array.from({ length: 8 }, () => runOnce(app, { db: h().db, now: clock.now, batchSize: 10 })));
    expect(paused.reduce((n, s) => n + s.claimed, 0)).toBe(10);
    expect(ran.every((q) => q === "default")).toBe(true);
    expect(await queued("mail")).toBe(40);
    // An invocation asked for the paused queue alone gets nothing either.
    expect((await runOnce(app, { db: h().db, now: clock.now, queues: ["mail"] })).claimed).toBe(0);

    await resumeQueue(h().db, "mail");
    const resumed = await Promise.all(Array.from({ length: 8 }, () => runOnce(app, { db: h().db, now: clock.now, batchSize: 5 })));
    expect(resumed.reduce((n, s) => n + s.claimed, 0)).toBe(40);
    expect(await queued("mail")).toBe(0);
    expect(ran.filter((q) => q === "mail")).toHaveLength(40);
  });

  it("pausing a queue lets its running jobs finish and starts no new ones", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const release = deferred();
    const started: number[] = [];
    const mail = app.task("mail.send", { queue: "mail" }, async (_args, job) => {
      started.push(job.id);
      if (started.length === 1) await release.promise;
    });
    const [first] = await mail.using(h().db).enqueueMany([{}, {}]);
    const running = runOnce(app, { db: h().db, now: clock.now, batchSize: 1, budget: Infinity, drain: false });
    await waitFor(() => started.length > 0, "the first job to start");

    await pauseQueue(h().db, "mail");
    expect((await runOnce(app, { db: h().db, now: clock.now })).claimed).toBe(0);
    release.resolve();
    expect(await running).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(started).toEqual([first]);
    expect(await queued("mail")).toBe(1);
  });

  it("a slot that comes due while its queue is paused is enqueued and runs after resume", async () => {
    const clock = new ManualClock("2026-06-01T12:00:00Z");
    const app = createApp({ clock: clock.now });
    let runs = 0;
    app.periodic("sync", { every: "1m", queue: "sync" }, async () => { runs++; });
    await pauseQueue(h().db, "sync");
    expect((await runOnce(app, { db: h().db, now: clock.now })).claimed).toBe(0);
    expect(await queued("sync")).toBe(1);
    await resumeQueue(h().db, "sync");
    expect((await runOnce(app, { db: h().db, now: clock.now })).claimed).toBe(1);
    expect(runs).toBe(1);
  });

  it("pause and resume can be repeated", async () => {
    await pauseQueue(h().db, "mail");
    await pauseQueue(h().db, "mail");
    expect(await h().rows("select name, paused from akadze.queues")).toEqual([{ name: "mail", paused: true }]);
    await resumeQueue(h().db, "mail");
    await resumeQueue(h().db, "mail");
    expect(await h().rows("select name, paused from akadze.queues")).toEqual([{ name: "mail", paused: false }]);
  });
}, ["node-postgres", "neon-http"]);

describe("invalid queue names", () => {
  it("an empty queue name is an InvalidInput error and writes nothing", async () => {
    const h = await openDriver("node-postgres");
    try {
      await expect(pauseQueue(h.db, "")).rejects.toThrow(InvalidInput);
      await expect(resumeQueue(h.db, "")).rejects.toThrow(InvalidInput);
      await expect(pauseQueue(h.db, 7 as any)).rejects.toThrow(InvalidInput);
      expect(await h.rows("select name from akadze.queues")).toEqual([]);
    } finally {
      await h.close();
    }
  });
});
