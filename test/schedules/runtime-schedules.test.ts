// Schedules made at runtime (createSchedule and its siblings) and the catch-up and overlap policies of every
// schedule, on every driver.
import { expect, it } from "vitest";
import * as v from "valibot";
import { sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import {
  createApp, createSchedule, deleteSchedule, InvalidInput, listSchedules, pauseQueue, pauseSchedule, resumeQueue, resumeSchedule, runOnce,
  runWorker, updateSchedule, type App,
} from "../../src/index.js";
import { queryJson } from "../../src/db/query.js";
import { ScheduleSlots } from "../../src/schedules/enqueue.js";
import type { ScheduleSlotReport } from "../../src/sql/schedules/enqueue-due-slots.js";
import type { StoredDefinition } from "../../src/sql/schedules/due-runtime-schedules.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { waitFor } from "../support/wait-for.js";

const iso = (at: string | Date) => new Date(at).toISOString();

/** ISO instants from `from` (inclusive) every `stepMs` up to `to` (inclusive). */
function instants(from: string, to: string, stepMs: number): string[] {
  const out: string[] = [];
  for (let t = Date.parse(from); t <= Date.parse(to); t += stepMs) out.push(iso(new Date(t)));
  return out;
}

forEachDriver((h) => {
  /** The run_at of every job of `task` (whatever its state), in order. */
  const slotsOf = async (task: string, where = "true") =>
    (await h().rows<{ run_at: string }>(`select run_at from akadze.all_jobs where task = '${task}' and ${where} order by run_at, id`)).map((r) => iso(r.run_at));
  const runAt = async (app: App, clock: ManualClock, at: string) => {
    clock.set(at);
    return runOnce(app, { db: h().db, now: clock.now });
  };

  it("8 racing invocations enqueue each slot of runtime schedules once, beside a schedule in code", async () => {
    const clock = new ManualClock("2026-06-01T11:59:55Z");
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    app.task("report", { args: v.object({ tenant: v.number() }) }, async ({ tenant }, job) => { ran.push(`${tenant}@${job.id}`); });
    app.periodic("code.tick", { cron: "*/10 * * * * *" }, async () => {});
    await createSchedule(h().db, { name: "t1.report", tenant: "t1", task: "report", cron: "*/10 * * * * *", args: { tenant: 1 } }, { app });
    await createSchedule(h().db, { name: "t2.report", tenant: "t2", task: "report", every: "20s", args: { tenant: 2 } }, { app });
    clock.set("2026-06-01T12:00:00Z");
    const end = Date.parse("2026-06-01T12:01:50Z");
    let seed = 7;
    for (let round = 0; ; round++) {
      await Promise.all(Array.from({ length: 8 }, (_, i) => runOnce(app, { db: h().db, now: clock.now, id: `r${round}-i${i}` })));
      if (clock.now().getTime() >= end) break;
      // Between 70 % of a period and a whole one, so every slot is seen by some round, some by two.
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      clock.set(new Date(Math.min(end, clock.now().getTime() + 7_000 + (seed % 3_001))));
    }
    const tenSeconds = instants("2026-06-01T12:00:00Z", "2026-06-01T12:01:50Z", 10_000);
    expect(await slotsOf("code.tick")).toEqual(tenSeconds);
    expect(await slotsOf("report", "args->>'tenant' = '1'")).toEqual(tenSeconds);
    expect(await slotsOf("report", "args->>'tenant' = '2'")).toEqual(instants("2026-06-01T12:00:00Z", "2026-06-01T12:01:40Z", 20_000));
    expect(ran).toHaveLength(12 + 6);
  });

  it("8 racing invocations after a 10-minute outage enqueue the latest 5 slots of catchUp { all: 5 } once each", async () => {
    const clock = new ManualClock("2026-06-01T11:59:30Z");
    const app = createApp({ clock: clock.now });
    app.periodic("code.all5", { every: "1m", catchUp: { all: 5 } }, async () => {});
    app.task("runtime.all5", async () => {});
    await createSchedule(h().db, { name: "r.all5", task: "runtime.all5", every: "1m", catchUp: { all: 5 } }, { app });
    const race = (round: string) => Promise.all(Array.from({ length: 8 }, (_, i) => runOnce(app, { db: h().db, now: clock.now, id: `${round}-${i}` })));
    clock.set("2026-06-01T12:00:00Z");
    await race("a");
    clock.set("2026-06-01T12:10:20Z");
    await race("b");
    const expected = ["2026-06-01T12:00:00.000Z", ...instants("2026-06-01T12:06:00Z", "2026-06-01T12:10:00Z", 60_000)];
    expect(await slotsOf("code.all5")).toEqual(expected);
    expect(await slotsOf("runtime.all5")).toEqual(expected);
    expect(await h().rows(`select count(*)::int as n from akadze.all_jobs where state <> 'succeeded'`)).toEqual([{ n: 0 }]);
  });

  for (const where of ["code", "runtime"] as const) {
    it(`after a 10-minute outage (schedules in ${where}): latest enqueues 1, all up to 5 the latest 5, skip none while the previous run is active`, async () => {
      const clock = new ManualClock("2026-06-01T11:59:30Z");
      const app = createApp({ clock: clock.now });
      const policies = { latest: {}, all5: { catchUp: { all: 5 } }, skip: { overlap: "skip" } } as const;
      for (const [name, policy] of Object.entries(policies)) {
        // The skip schedule's jobs go to a paused queue: its 12:00 job stays queued through the outage.
        const queue = name === "skip" ? "held" : "default";
        if (where === "code") app.periodic(name, { every: "1m", queue, ...policy }, async () => {});
        else {
          app.task(name, { queue }, async () => {});
          await createSchedule(h().db, { name: `${name}.schedule`, task: name, every: "1m", ...policy }, { app });
        }
      }
      await pauseQueue(h().db, "held");
      await runAt(app, clock, "2026-06-01T12:00:00Z");
      for (const name of Object.keys(policies)) expect(await slotsOf(name), name).toEqual(["2026-06-01T12:00:00.000Z"]);

      // Ten minutes without an invocation.
      await runAt(app, clock, "2026-06-01T12:10:20Z");
      expect(await slotsOf("latest")).toEqual(["2026-06-01T12:00:00.000Z", "2026-06-01T12:10:00.000Z"]);
      expect(await slotsOf("all5")).toEqual(["2026-06-01T12:00:00.000Z", ...instants("2026-06-01T12:06:00Z", "2026-06-01T12:10:00Z", 60_000)]);
      expect(await slotsOf("skip")).toEqual(["2026-06-01T12:00:00.000Z"]);

      // The previous run finishes; the dropped 12:10 slot stays dropped, 12:11 fires.
      await resumeQueue(h().db, "held");
      await runAt(app, clock, "2026-06-01T12:10:40Z");
      expect(await h().rows(`select state from akadze.all_jobs where task = 'skip'`)).toEqual([{ state: "succeeded" }]);
      await runAt(app, clock, "2026-06-01T12:11:00Z");
      expect(await slotsOf("skip")).toEqual(["2026-06-01T12:00:00.000Z", "2026-06-01T12:11:00.000Z"]);
      expect(await slotsOf("latest")).toHaveLength(3);
      expect(await slotsOf("all5")).toHaveLength(7);
    });
  }

  it("a runtime schedule fires from its first slot after creation, in the invocation that finds it due", async () => {
    const clock = new ManualClock("2026-06-01T12:20:00Z");
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    app.task("report", { args: v.object({ tenant: v.number() }), queue: "reports" }, async ({ tenant }) => { ran.push(`${tenant}@${iso(clock.now())}`); });
    const created = await createSchedule(h().db, { name: "t7.report", tenant: "t7", task: "report", cron: "0 * * * *", timezone: "Europe/Berlin", args: { tenant: 7 } }, { app });
    expect(created).toMatchObject({ name: "t7.report", tenant: "t7", task: "report", cron: "0 * * * *", timezone: "Europe/Berlin", everyMs: null,
      catchUp: "latest", overlap: "allow", paused: false, lastSlot: null, nextSlot: new Date("2026-06-01T13:00:00Z") });
    // 12:00 came before it was created: it does not fire.
    // (Round trips are not counted: the history's maintenance may ride beside the claim, as a process sees fit.)
    expect(await runAt(app, clock, "2026-06-01T12:59:00Z")).toMatchObject({ claimed: 0 });
    expect(await h().rows(`select id from akadze.all_jobs`)).toEqual([]);
    // Due: the first claim learns the definition, the second fires the slot and claims its job.
    expect(await runAt(app, clock, "2026-06-01T13:00:05Z")).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(ran).toEqual(["7@2026-06-01T13:00:05.000Z"]);
    expect(await h().rows(`select queue, args from akadze.all_jobs`)).toEqual([{ queue: "reports", args: { tenant: 7 } }]);
    expect(await runAt(app, clock, "2026-06-01T13:30:00Z")).toMatchObject({ claimed: 0 });
    expect(await h().rows(`select count(*)::int as n from akadze.all_jobs`)).toEqual([{ n: 1 }]);
  });

  it("update, pause, resume and delete: each takes effect at the next slot, and a paused schedule's slots are not caught up", async () => {
    const clock = new ManualClock("2026-06-01T11:59:00Z");
    const app = createApp({ clock: clock.now });
    app.task("report", { args: v.object({ tenant: v.number(), format: v.optional(v.string()) }) }, async () => {});
    await createSchedule(h().db, { name: "r", task: "report", every: "1m", args: { tenant: 1 } }, { app });
    await runAt(app, clock, "2026-06-01T12:00:00Z");

    const updated = await updateSchedule(h().db, "r", { args: { tenant: 1, format: "pdf" }, catchUp: { all: 3 } }, { app });
    expect(updated).toMatchObject({ args: { tenant: 1, format: "pdf" }, catchUp: { all: 3 }, everyMs: 60_000, nextSlot: new Date("2026-06-01T12:01:00Z") });
    await runAt(app, clock, "2026-06-01T12:01:00Z");

    expect(await pauseSchedule(h().db, "r")).toBe(true);
    await runAt(app, clock, "2026-06-01T12:02:00Z");
    await runAt(app, clock, "2026-06-01T12:05:00Z");
    expect(await resumeSchedule(h().db, "r", { now: new Date("2026-06-01T12:05:30Z") })).toBe(true);
    // catchUp { all: 3 } would fire 12:03-12:05 after an outage; after a pause, only from the resume on.
    await runAt(app, clock, "2026-06-01T12:06:00Z");

    await updateSchedule(h().db, "r", { cron: "*/10 * * * *" }, { app, now: new Date("2026-06-01T12:06:10Z") });
    await runAt(app, clock, "2026-06-01T12:07:00Z");
    await runAt(app, clock, "2026-06-01T12:10:00Z");
    expect(await deleteSchedule(h().db, "r")).toBe(true);
    await runAt(app, clock, "2026-06-01T12:20:00Z");

    expect(await h().rows(`select run_at, args->>'format' as format from akadze.all_jobs order by run_at`)).toEqual([
      { run_at: "2026-06-01T12:00:00+00:00", format: null },
      { run_at: "2026-06-01T12:01:00+00:00", format: "pdf" },
      { run_at: "2026-06-01T12:06:00+00:00", format: "pdf" },
      { run_at: "2026-06-01T12:10:00+00:00", format: "pdf" },
    ]);
    expect(await deleteSchedule(h().db, "r")).toBe(false);
    expect(await pauseSchedule(h().db, "r")).toBe(false);
    expect(await updateSchedule(h().db, "r", { every: "5m" }, { app })).toBeNull();
  });

  it("a definition learned before a change fires nothing and is forgotten; the claim brings back the new one", async () => {
    const app = createApp();
    app.task("report", async () => {});
    const created = new Date("2026-06-01T11:59:30Z");
    await createSchedule(h().db, { name: "r", task: "report", every: "1m" }, { app, now: created });
    const slots = new ScheduleSlots(app);
    const claimAt = async (at: string) => {
      const { extra, report, answered } = slots.forClaim(new Date(at), sql`${at}::timestamptz`);
      const r = await queryJson<{ schedules?: ScheduleSlotReport; runtimeDue: StoredDefinition[] | null }>(h().db, sql`with ${sql.join(extra, sql`, `)}
        select jsonb_build_object(${sql.join(Object.entries(report).map(([k, value]) => sql`${k}::text, ${value}`), sql`, `)}) as r`);
      return { learned: answered(r.schedules, r.runtimeDue), runtimeDue: r.runtimeDue?.map((d) => [d.name, d.revision]) ?? null };
    };
    expect(await claimAt("2026-06-01T12:00:01Z")).toEqual({ learned: true, runtimeDue: [["r", 0]] });
    expect(await claimAt("2026-06-01T12:00:02Z")).toEqual({ learned: false, runtimeDue: null });
    expect(await slotsOf("report")).toEqual(["2026-06-01T12:00:00.000Z"]);
    // Changed after this process learned it: its offer of 12:01 from revision 0 fires nothing; the new definition comes back.
    await updateSchedule(h().db, "r", { args: {}, catchUp: { all: 2 } }, { app, now: new Date("2026-06-01T12:00:30Z") });
    expect(await claimAt("2026-06-01T12:01:01Z")).toEqual({ learned: true, runtimeDue: [["r", 1]] });
    expect(await slotsOf("report")).toEqual(["2026-06-01T12:00:00.000Z"]);
    expect(await claimAt("2026-06-01T12:01:02Z")).toEqual({ learned: false, runtimeDue: null });
    expect(await slotsOf("report")).toEqual(["2026-06-01T12:00:00.000Z", "2026-06-01T12:01:00.000Z"]);
  });

  it("claims probe for due runtime schedules only while one is active, and the claim that first sees one asks for the next at once", async () => {
    const app = createApp();
    app.task("report", async () => {});
    const slots = new ScheduleSlots(app);
    const claimAt = async (at: string) => {
      const { extra, report, answered } = slots.forClaim(new Date(at), sql`${at}::timestamptz`);
      const probes = extra.some((cte) => new PgDialect().sqlToQuery(cte).sql.includes("sched_runtime_due as ("));
      const r = await queryJson<{ schedules?: ScheduleSlotReport; runtimeDue?: StoredDefinition[] | null; runtimeAny: boolean }>(h().db, sql`${extra.length > 0 ? sql`with ${sql.join(extra, sql`, `)}` : sql``}
        select jsonb_build_object(${sql.join(Object.entries(report).map(([k, value]) => sql`${k}::text, ${value}`), sql`, `)}) as r`);
      return { probes, again: answered(r.schedules, r.runtimeDue, r.runtimeAny) };
    };
    // The first claim probes and finds none active; the next ones leave the probe out.
    expect(await claimAt("2026-06-01T11:59:00Z")).toEqual({ probes: true, again: false });
    expect(await claimAt("2026-06-01T11:59:10Z")).toEqual({ probes: false, again: false });
    // Another process makes one: the next claim sees it is active and asks for another at once, which probes and
    // learns it; the claim after fires its slot.
    await createSchedule(h().db, { name: "r", task: "report", every: "1m" }, { app, now: new Date("2026-06-01T11:59:30Z") });
    expect(await claimAt("2026-06-01T12:00:01Z")).toEqual({ probes: false, again: true });
    expect(await claimAt("2026-06-01T12:00:02Z")).toEqual({ probes: true, again: true });
    expect(await claimAt("2026-06-01T12:00:03Z")).toMatchObject({ probes: true });
    expect(await slotsOf("report")).toEqual(["2026-06-01T12:00:00.000Z"]);
    // Paused, it is not active: the probe goes again.
    await pauseSchedule(h().db, "r");
    await claimAt("2026-06-01T12:00:04Z");
    expect(await claimAt("2026-06-01T12:00:05Z")).toMatchObject({ probes: false });
  });

  it("a long-lived worker fires runtime schedules, follows a change and forgets a deleted one", async () => {
    const clock = new ManualClock("2026-06-01T11:59:30Z");
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    app.task("report", { args: v.object({ format: v.string() }) }, async ({ format }, job) => { ran.push(`${format}@${job.id}`); });
    app.task("marker", async () => {});
    await createSchedule(h().db, { name: "r", task: "report", every: "1m", args: { format: "pdf" } }, { app });
    const stop = new AbortController();
    const worker = runWorker(app, { db: h().db, now: clock.now, maxPoll: "100ms", signal: stop.signal, listen: false });
    const jobsOf = async (task: string) => (await h().rows(`select run_at, args, state from akadze.all_jobs where task = '${task}' order by run_at`));
    const reach = (task: string, n: number) => waitFor(async () => (await jobsOf(task)).filter((j) => j.state === "succeeded").length >= n, `${n} ${task} jobs to run`);
    try {
      clock.set("2026-06-01T12:00:00Z");
      await reach("report", 1);
      clock.set("2026-06-01T12:01:00Z");
      await reach("report", 2);
      await updateSchedule(h().db, "r", { args: { format: "csv" } }, { app });
      clock.set("2026-06-01T12:02:00Z");
      await reach("report", 3);
      expect(await deleteSchedule(h().db, "r")).toBe(true);
      // A schedule made now marks a claim after the delete: the deleted one's 12:03 must not fire in it or later.
      await createSchedule(h().db, { name: "m", task: "marker", every: "1m" }, { app });
      clock.set("2026-06-01T12:03:00Z");
      await reach("marker", 1);
    } finally {
      stop.abort();
      await worker;
    }
    expect((await jobsOf("report")).map((j) => [iso(j.run_at), j.args.format])).toEqual([
      ["2026-06-01T12:00:00.000Z", "pdf"], ["2026-06-01T12:01:00.000Z", "pdf"], ["2026-06-01T12:02:00.000Z", "csv"]]);
    expect(ran).toHaveLength(3);
  });

  it("bad input is an InvalidInput error and stores nothing", async () => {
    const app = createApp();
    app.task("report", { args: v.object({ tenant: v.number() }) }, async () => {});
    app.periodic("code.tick", { every: "1m" }, async () => {});
    const bad: [string, object, RegExp][] = [
      ["an unknown task", { name: "n", task: "nope", every: "1m" }, /task "nope", which is not registered/],
      ["args the task rejects", { name: "n", task: "report", every: "1m", args: { tenant: "7" } }, /Invalid args of schedule "n" for task report/],
      ["a bad cron expression", { name: "n", task: "report", cron: "61 * * * *", args: { tenant: 1 } }, /bad cron expression/],
      ["an unknown time zone", { name: "n", task: "report", cron: "0 * * * *", timezone: "Mars/Base", args: { tenant: 1 } }, /unknown time zone/],
      ["catch-up all with overlap skip", { name: "n", task: "report", every: "1m", args: { tenant: 1 }, catchUp: { all: 3 }, overlap: "skip" }, /choose one/],
      ["a catch-up over 100", { name: "n", task: "report", every: "1m", args: { tenant: 1 }, catchUp: { all: 101 } }, /catchUp must be "latest" or \{ all: n \}/],
      ["a name the code schedules", { name: "code.tick", task: "report", every: "1m", args: { tenant: 1 } }, /defined in the app's code/],
      ["an unknown field", { name: "n", task: "report", every: "1m", args: { tenant: 1 }, tz: "UTC" }, /Invalid schedule/],
    ];
    for (const [what, entry, message] of bad) {
      await expect(createSchedule(h().db, entry as any, { app }), what).rejects.toThrow(InvalidInput);
      await expect(createSchedule(h().db, entry as any, { app }), what).rejects.toThrow(message);
    }
    expect(await h().rows(`select name from akadze.schedules`)).toEqual([]);

    await createSchedule(h().db, { name: "n", task: "report", every: "1m", args: { tenant: 1 } }, { app });
    await expect(createSchedule(h().db, { name: "n", task: "report", every: "5m", args: { tenant: 2 } }, { app })).rejects.toThrow(/already exists/);
    await expect(updateSchedule(h().db, "n", { args: { tenant: "x" } }, { app })).rejects.toThrow(InvalidInput);
    await expect(updateSchedule(h().db, "n", { timezone: "UTC" }, { app })).rejects.toThrow(/timezone applies to cron schedules only/);
    expect(await h().rows(`select args, every_ms, revision from akadze.schedules`)).toEqual([{ args: { tenant: 1 }, every_ms: 60_000, revision: 0 }]);
  });

  it("listSchedules lists one tenant's runtime schedules, or all beside the code's", async () => {
    const clock = new ManualClock("2026-06-01T12:00:30Z");
    const app = createApp({ clock: clock.now });
    app.task("report", async () => {});
    app.periodic("code.tick", { every: "1h" }, async () => {});
    await createSchedule(h().db, { name: "a.daily", tenant: "a", task: "report", cron: "0 9 * * *", timezone: "Europe/Berlin" }, { app });
    await createSchedule(h().db, { name: "a.often", tenant: "a", task: "report", every: "5m", catchUp: { all: 2 }, paused: true }, { app });
    await createSchedule(h().db, { name: "b.daily", tenant: "b", task: "report", cron: "0 9 * * *", overlap: "skip" }, { app });
    expect((await listSchedules(h().db, { tenant: "a" })).map((s) => [s.name, s.schedule, s.catchUp, s.overlap, s.paused, s.nextSlot])).toEqual([
      ["a.daily", 'cron "0 9 * * *" Europe/Berlin', "latest", "allow", false, new Date("2026-06-02T07:00:00Z")],
      ["a.often", "every 300000 ms", { all: 2 }, "allow", true, new Date("2026-06-01T12:05:00Z")],
    ]);
    expect((await listSchedules(h().db, { app })).map((s) => [s.name, s.runtime, s.tenant, s.defined])).toEqual([
      ["a.daily", true, "a", true], ["a.often", true, "a", true], ["b.daily", true, "b", true], ["code.tick", false, null, true],
    ]);
    await expect(listSchedules(h().db, { tenant: "" })).rejects.toThrow(InvalidInput);
  });
});
