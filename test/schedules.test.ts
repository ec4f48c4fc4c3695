// Schedules (SPEC §1 `app.periodic` / `app.addSchedules`, §2 "Schedules"), on node-postgres and neon-http.
import { describe, expect, it } from "vitest";
import * as v from "valibot";
import { sql } from "drizzle-orm";
import { createApp, InvalidInput, listSchedules, runOnce, type App } from "../src/index.js";
import { queryJson } from "../src/db/query.js";
import { ScheduleSlots } from "../src/schedules/enqueue.js";
import type { ScheduleSlotReport } from "../src/sql/schedules/enqueue-due-slots.js";
import { forEachDriver } from "./support/drivers.js";
import { ManualClock } from "./support/clock.js";
import { waitFor } from "./support/wait-for.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

const iso = (at: string | Date) => new Date(at).toISOString();

/** ISO instants from `from` (inclusive) every `stepMs` up to `to` (inclusive). */
function instants(from: string, to: string, stepMs: number): string[] {
  const out: string[] = [];
  for (let t = Date.parse(from); t <= Date.parse(to); t += stepMs) out.push(iso(new Date(t)));
  return out;
}

const SIZES: Record<"node-postgres" | "neon-http", { slots: number }> = {
  "node-postgres": { slots: 100 },
  "neon-http": { slots: 20 },
};

forEachDriver((h, driver) => {

    const slotsOf = async (task: string) =>
      (await h().rows<{ run_at: string }>(`select run_at from akadze.all_jobs where task = '${task}' order by run_at, id`)).map((r) => iso(r.run_at));
    /** One invocation at each instant. */
    const tickAt = async (app: App, clock: ManualClock, at: string[]) => {
      for (const t of at) { clock.set(t); await runOnce(app, { db: h().db, now: clock.now }); }
    };

    it(`8 concurrent invocations ticking across ${SIZES[driver as keyof typeof SIZES].slots} cron slots enqueue exactly ${SIZES[driver as keyof typeof SIZES].slots} jobs`, async () => {
      const clock = new ManualClock("2026-06-01T12:00:00Z");
      const app = createApp({ clock: clock.now });
      let ran = 0;
      app.periodic("tick", { cron: "*/10 * * * * *" }, async () => { ran++; });
      const slots = SIZES[driver as keyof typeof SIZES].slots;
      const end = Date.parse("2026-06-01T12:00:00Z") + (slots - 1) * 10_000;
      let seed = 11;
      for (let round = 0; ; round++) {
        await Promise.all(Array.from({ length: 8 }, (_, i) => runOnce(app, { db: h().db, now: clock.now, id: `r${round}-i${i}` })));
        if (clock.now().getTime() >= end) break;
        // Between 70 % of a period and a whole one, so every slot is seen by some round, some by two.
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        clock.set(new Date(Math.min(end, clock.now().getTime() + 7_000 + (seed % 3_001))));
      }

      const enqueued = await slotsOf("tick");
      expect(enqueued).toEqual(instants("2026-06-01T12:00:00Z", iso(new Date(end)), 10_000));
      expect(ran).toBe(slots);
    });

    if (driver === "node-postgres") {
      it("an invocation that waited while another fired the previous slot still fires its own", async () => {
        const clock = new ManualClock("2026-06-01T12:00:00Z");
        const app = createApp({ clock: clock.now });
        app.periodic("minutely", { cron: "* * * * *" }, async () => {});
        await runOnce(app, { db: h().db, now: clock.now });
        // Another invocation, a moment behind, is firing 12:01 and holds the row...
        const other = await (h().db as any).$client.connect();
        try {
          await other.query("begin");
          await other.query("update akadze.schedules set last_slot = '2026-06-01T12:01:00Z' where name = 'minutely'");
          // ...while this one, already at 12:02, comes to fire 12:02.
          clock.set("2026-06-01T12:02:00.050Z");
          const run = runOnce(app, { db: h().db, now: clock.now });
          await waitFor(async () => (await h().rows(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`)).length > 0, "this invocation to wait for the row lock");
          await other.query("commit");
          await run;
        } finally {
          other.release();
        }
        expect(await slotsOf("minutely")).toEqual(["2026-06-01T12:00:00.000Z", "2026-06-01T12:02:00.000Z"]);
      });
    }

    it("a process whose clock is periods off the database's fires no stale slot: it learns the offset, then fires the latest", async () => {
      const app = createApp();
      app.periodic("tick.1s", { every: "1s" }, async () => {});
      /** One claim's schedule CTEs as the claim carries them, on the database clock `dbAt`, from a host reading `hostAt`. */
      const claimAt = async (slots: ScheduleSlots, hostAt: string, dbAt: string) => {
        const { extra, report, answered } = slots.forClaim(new Date(hostAt), sql`${dbAt}::timestamptz`);
        if (extra.length === 0) return;
        const r = await queryJson<{ schedules: ScheduleSlotReport }>(h().db, sql`with ${sql.join(extra, sql`, `)}
          select jsonb_build_object('scheduled', ${report.scheduled}, 'schedules', ${report.schedules}) as r`);
        answered(r.schedules);
      };
      // Three seconds behind, its first guess offers 12:00:06-09, all due at 12:00:10.5: the latest of them is stale.
      const behind = new ScheduleSlots(app);
      await claimAt(behind, "2026-06-01T12:00:07.500Z", "2026-06-01T12:00:10.500Z");
      expect(await slotsOf("tick.1s")).toEqual([]);
      await claimAt(behind, "2026-06-01T12:00:07.600Z", "2026-06-01T12:00:10.600Z");
      expect(await slotsOf("tick.1s")).toEqual(["2026-06-01T12:00:10.000Z"]);
      // Three seconds ahead: nothing it offers first is due; then it fires the next slot, none skipped.
      const ahead = new ScheduleSlots(app);
      await claimAt(ahead, "2026-06-01T12:00:14.100Z", "2026-06-01T12:00:11.100Z");
      expect(await slotsOf("tick.1s")).toEqual(["2026-06-01T12:00:10.000Z"]);
      await claimAt(ahead, "2026-06-01T12:00:14.200Z", "2026-06-01T12:00:11.200Z");
      await claimAt(behind, "2026-06-01T12:00:09.300Z", "2026-06-01T12:00:12.300Z");
      expect(await slotsOf("tick.1s")).toEqual(["2026-06-01T12:00:10.000Z", "2026-06-01T12:00:11.000Z", "2026-06-01T12:00:12.000Z"]);
    });

    it("a Europe/Berlin hourly schedule fires at every UTC hour across both 2026 DST changes", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      app.periodic("report.hourly", { cron: "0 * * * *", timezone: "Europe/Berlin" }, async () => {});
      // 29 March: 02:00 CET jumps to 03:00 CEST at 01:00 UTC. 25 October: 03:00 CEST falls back to 02:00 CET at 01:00 UTC.
      for (const [from, to] of [["2026-03-28T21:00:00Z", "2026-03-29T04:00:00Z"], ["2026-10-24T21:00:00Z", "2026-10-25T04:00:00Z"]]) {
        await h().reset();
        await tickAt(app, clock, instants(from, to, 30 * MINUTE));
        // Local 22:00, 23:00, 00:00, 01:00, 03:00 CEST, ... in March; 02:00 CEST and 02:00 CET both fire in October.
        expect(await slotsOf("report.hourly"), from).toEqual(instants(from, to, HOUR));
      }
    });

    it("a daily 02:30 Europe/Berlin schedule fires once on each 2026 DST day, after the gap and at the first 02:30", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      app.periodic("nightly", { cron: "30 2 * * *", timezone: "Europe/Berlin" }, async () => {});
      await tickAt(app, clock, instants("2026-03-27T12:00:00Z", "2026-03-29T12:00:00Z", 3 * HOUR));
      expect(await slotsOf("nightly")).toEqual([
        "2026-03-28T01:30:00.000Z", // 02:30 CET
        "2026-03-29T01:00:00.000Z", // 02:30 does not exist: 03:00 CEST, the first instant after the gap
      ]);
      await h().reset();
      await tickAt(app, clock, instants("2026-10-23T12:00:00Z", "2026-10-25T12:00:00Z", 3 * HOUR));
      expect(await slotsOf("nightly")).toEqual([
        "2026-10-24T00:30:00.000Z", // 02:30 CEST
        "2026-10-25T00:30:00.000Z", // the first of the two 02:30s (CEST); 02:30 CET (01:30 UTC) does not fire again
      ]);
    });

    it('every: "5m" fires every five minutes', async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      app.periodic("sync", { every: "5m" }, async () => {});
      await tickAt(app, clock, instants("2026-06-01T12:00:00Z", "2026-06-01T12:31:00Z", 2 * MINUTE));
      expect(await slotsOf("sync")).toEqual(instants("2026-06-01T12:00:00Z", "2026-06-01T12:30:00Z", 5 * MINUTE));
    });

    it("after a long gap only the latest missed slot is enqueued", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      app.periodic("report.hourly", { cron: "0 * * * *" }, async () => {});
      await tickAt(app, clock, ["2026-06-01T12:00:00Z", "2026-06-01T17:30:00Z", "2026-06-01T17:45:00Z", "2026-06-01T18:00:00Z"]);
      expect(await slotsOf("report.hourly")).toEqual(["2026-06-01T12:00:00.000Z", "2026-06-01T17:00:00.000Z", "2026-06-01T18:00:00.000Z"]);
    });

    it("a schedule first seen well after its latest slot waits for the next one; within a minute of it, fires it", async () => {
      const clock = new ManualClock();
      const late = createApp({ clock: clock.now });
      late.periodic("late", { cron: "0 * * * *" }, async () => {});
      await tickAt(late, clock, ["2026-06-01T12:20:00Z", "2026-06-01T12:59:59Z", "2026-06-01T13:00:00Z"]);
      expect(await slotsOf("late")).toEqual(["2026-06-01T13:00:00.000Z"]);

      const prompt = createApp({ clock: clock.now });
      prompt.periodic("prompt", { cron: "0 * * * *" }, async () => {});
      await tickAt(prompt, clock, ["2026-06-01T14:00:59Z"]);
      expect(await slotsOf("prompt")).toEqual(["2026-06-01T14:00:00.000Z"]);
    });

    it("a due slot runs in the invocation that enqueued it", async () => {
      const clock = new ManualClock("2026-06-01T12:00:00Z");
      const app = createApp({ clock: clock.now });
      const ran: string[] = [];
      app.periodic("sync", { every: "1m" }, async (_args, job) => { ran.push(`${job.task}@${clock.now().toISOString()}`); });
      const summary = await runOnce(app, { db: h().db, now: clock.now });
      expect(summary).toMatchObject({ claimed: 1, succeeded: 1, roundTrips: 3 }); // claim with the schedules, claim again, complete
      clock.advance(30_000);
      expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ claimed: 0, roundTrips: 1 });
      expect(ran).toEqual(["sync@2026-06-01T12:00:00.000Z"]);
    });

    it("addSchedules enqueues an existing task with the schedule's args on the task's queue", async () => {
      const clock = new ManualClock("2026-06-01T03:00:00Z");
      const app = createApp({ clock: clock.now });
      const seen: number[] = [];
      app.task("mail.send", { args: v.object({ userId: v.number() }), queue: "mail" }, async ({ userId }) => { seen.push(userId); });
      app.addSchedules([
        { name: "nightly", task: "mail.send", cron: "0 3 * * *", args: { userId: 1 } },
        { name: "nightly.admin", task: "mail.send", cron: "0 3 * * *", timezone: "UTC", args: { userId: 2 } },
      ]);
      await runOnce(app, { db: h().db, now: clock.now });
      expect(seen.sort()).toEqual([1, 2]);
      expect(await h().rows(`select task, queue, args from akadze.all_jobs order by id`)).toEqual([
        { task: "mail.send", queue: "mail", args: { userId: 1 } },
        { task: "mail.send", queue: "mail", args: { userId: 2 } },
      ]);
    });

    it("a schedule removed from the code stops firing and is listed as stale", async () => {
      const clock = new ManualClock();
      const before = createApp({ clock: clock.now });
      before.periodic("kept", { cron: "0 * * * *" }, async () => {});
      before.periodic("dropped", { cron: "0 * * * *" }, async () => {});
      await tickAt(before, clock, ["2026-06-01T12:00:00Z"]);

      const after = createApp({ clock: clock.now });
      after.periodic("kept", { cron: "0 * * * *" }, async () => {});
      after.task("dropped", async () => {}); // the task stays, its schedule is gone
      await tickAt(after, clock, ["2026-06-01T13:00:00Z", "2026-06-01T14:00:00Z"]);

      expect(await slotsOf("kept")).toHaveLength(3);
      expect(await slotsOf("dropped")).toEqual(["2026-06-01T12:00:00.000Z"]);
      clock.set("2026-06-01T14:10:00Z");
      expect(await listSchedules(h().db, { app: after })).toEqual([
        { name: "dropped", task: "dropped", runtime: false, tenant: null, schedule: null, args: null, catchUp: "latest", overlap: "allow", paused: false,
          lastSlot: new Date("2026-06-01T12:00:00Z"), nextSlot: null, seenAt: new Date("2026-06-01T12:00:00Z"), defined: false },
        { name: "kept", task: "kept", runtime: false, tenant: null, schedule: 'cron "0 * * * *"', args: {}, catchUp: "latest", overlap: "allow", paused: false,
          lastSlot: new Date("2026-06-01T14:00:00Z"), nextSlot: new Date("2026-06-01T15:00:00Z"), seenAt: new Date("2026-06-01T14:00:00Z"), defined: true },
      ]);
      expect((await listSchedules(h().db)).map((s) => [s.name, s.defined, s.nextSlot])).toEqual([["dropped", null, null], ["kept", null, null]]);
    });
}, ["node-postgres", "neon-http"]);

describe("invalid schedules", () => {
  const handler = async () => {};
  const badPeriodic: [string, object, RegExp][] = [
    ["a bad cron expression", { cron: "61 * * * *" }, /bad cron expression "61 \* \* \* \*"/],
    ["a cron expression with too few fields", { cron: "* *" }, /bad cron expression/],
    ["an unknown time zone", { cron: "0 * * * *", timezone: "Mars/Olympus_Mons" }, /unknown time zone "Mars\/Olympus_Mons"/],
    ["both cron and every", { cron: "0 * * * *", every: "5m" }, /either cron or every/],
    ["neither cron nor every", { queue: "x" }, /either cron or every/],
    ["a zero every", { every: 0 }, /every must be a positive Duration/],
    ["a negative every", { every: -5_000 }, /every must be a positive Duration/],
    ["an every that is not a duration", { every: "soon" }, /every must be a positive Duration/],
    ["a time zone on an every schedule", { every: "5m", timezone: "UTC" }, /timezone applies to cron schedules only/],
    ["a catch-up of none", { every: "5m", catchUp: { all: 0 } }, /catchUp must be "latest" or \{ all: n \} with n from 1 to 100/],
    ["a catch-up that is not a policy", { every: "5m", catchUp: "all" }, /catchUp must be "latest" or \{ all: n \}/],
    ["an unknown overlap policy", { every: "5m", overlap: "buffer" }, /overlap must be "allow" or "skip"; got "buffer"/],
    ["catch-up all with overlap skip", { every: "5m", catchUp: { all: 3 }, overlap: "skip" }, /overlap "skip" forbids: choose one/],
  ];
  for (const [what, options, message] of badPeriodic) {
    it(`periodic with ${what} is an InvalidInput error and registers nothing`, () => {
      const app = createApp();
      const error = captureError(() => app.periodic("p", options as any, handler));
      expect(error).toBeInstanceOf(InvalidInput);
      expect((error as Error).message).toMatch(message);
      expect(app.tasks.size).toBe(0);
      expect(app.schedules.size).toBe(0);
    });
  }

  const badEntries: [string, object[], RegExp][] = [
    ["a schedule naming an unknown task", [{ name: "n", task: "nope", cron: "0 3 * * *" }], /task "nope", which is not registered/],
    ["args the task's schema rejects", [{ name: "n", task: "mail.send", cron: "0 3 * * *", args: { userId: "7" } }], /Invalid args of schedule "n"/],
    ["a duplicate name", [{ name: "n", task: "mail.send", every: "1h", args: { userId: 1 } }, { name: "n", task: "mail.send", every: "2h", args: { userId: 1 } }], /already defined/],
    ["an unknown field", [{ name: "n", task: "mail.send", cron: "0 3 * * *", args: { userId: 1 }, tz: "UTC" }], /Invalid schedule #1/],
    ["a bad policy", [{ name: "n", task: "mail.send", every: "1h", args: { userId: 1 }, catchUp: { all: 101 } }], /catchUp must be/],
    ["a bad entry after a good one", [{ name: "ok", task: "mail.send", every: "1h", args: { userId: 1 } }, { name: "bad", task: "mail.send", cron: "0 3 * *", args: { userId: 1 } }], /bad cron expression/],
  ];
  for (const [what, entries, message] of badEntries) {
    it(`addSchedules with ${what} is an InvalidInput error and adds none`, () => {
      const app = createApp();
      app.task("mail.send", { args: v.object({ userId: v.number() }) }, handler);
      const error = captureError(() => app.addSchedules(entries as any));
      expect(error).toBeInstanceOf(InvalidInput);
      expect((error as Error).message).toMatch(message);
      expect(app.schedules.size).toBe(0);
    });
  }

  it("a periodic task named like a registered task is refused and the first one is kept", () => {
    const app = createApp();
    const first = app.task("sync", handler);
    expect(() => app.periodic("sync", { every: "5m" }, handler)).toThrow(InvalidInput);
    expect(app.tasks.get("sync")).toBe(first.definition);
    expect(app.schedules.size).toBe(0);
  });
});

function captureError(fn: () => unknown): unknown {
  try { fn(); } catch (error) { return error; }
  return undefined;
}
