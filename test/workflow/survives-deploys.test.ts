// Workflows survive a deploy: a run parked on the old code goes on after the code changed, by step.patched (a branch
// the old runs skip), a renamed step ({ name, formerly }) or a version whose handler the new code keeps (`previous`);
// bad versions and step names are refused when declared, a database whose checks predate them at start. Every driver.
import { expect, it } from "vitest";
import * as v from "valibot";
import { createApp, InvalidInput, requeue, runOnce, sendEvent, type Db, type WorkflowHandler } from "../../src/index.js";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { forEachDriver } from "../support/drivers.js";
import { createTestDatabase } from "../support/postgres.js";
import { ManualClock } from "../support/clock.js";

// Each "deploy" is a second app declaring the same workflow with new code, over the same database, with a test clock.

const HOUR = 3_600_000;
const Order = v.object({ order: v.number() });

it("a workflow's version and previous handlers are checked when it is declared", () => {
  const app = createApp();
  const body = async () => 1;
  expect(() => app.workflow("w0", { version: 0 }, body)).toThrow(new InvalidInput("workflow w0: version must be a whole number from 1, got 0"));
  expect(() => app.workflow("w1", { version: 1.5 }, body)).toThrow(InvalidInput);
  expect(() => app.workflow("w2", { version: 2, previous: { 2: body } }, body)).toThrow(/previous has version 2, which is the current version/);
  expect(() => app.workflow("w3", { version: 2, previous: { one: body } as never }, body)).toThrow(/previous has a key "one"; its keys are versions/);
  expect(() => app.workflow("w4", { version: 2, previous: { 1: "v1" as never } }, body)).toThrow("workflow w4: previous[1] must be a handler function");
  expect(app.tasks.size).toBe(0); // nothing refused was registered
});

it("a database whose steps check predates patches and versions is refused at start, naming the check and the fix", async () => {
  const database = await createTestDatabase("deploys_schema");
  const pool = new pg.Pool({ connectionString: database.url, max: 2 });
  try {
    await pool.query("alter table akadze.steps drop constraint steps_kind_check; " +
      "alter table akadze.steps add constraint steps_kind_check check (kind in ('run', 'sleep', 'event', 'jobs'))");
    const app = createApp();
    app.workflow("w", async (_a, step) => step.patched("p"));
    await expect(runOnce(app, { db: drizzle(pool) as unknown as Db })).rejects.toThrow(
      /^akadze's schema in this database lacks akadze\.steps_kind_check\('version'\): run `npx akadze migrate`/);
  } finally {
    await pool.end();
    await database.drop();
  }
});

forEachDriver((h) => {
  const job = async (id: number) => (await h().rows(`select state, attempt, result, errors from akadze.all_jobs where id = ${id}`))[0];
  const journal = async (id: number) => (await h().rows(`select name, kind, state, result from akadze.steps where job_id = ${id} order by seq, kind <> 'patch'`))
    .map((s) => `${s.name || "(version)"} ${s.kind} ${s.state}${s.kind === "version" ? ` ${s.result}` : ""}`);
  const invoke = (app: ReturnType<typeof createApp>, clock: ManualClock) => runOnce(app, { db: h().db, now: clock.now, budget: "1h" });

  it("a run parked at step 2 completes after a deploy that adds a patched step before it and renames the step it is parked at; new runs take the new path", async () => {
    const clock = new ManualClock();
    const ran: string[] = [];
    // The code before the deploy: charge, pause an hour, email.
    const before = createApp({ clock: clock.now });
    const shipBefore = before.workflow("order.ship", { args: Order }, async ({ order }, step) => {
      await step.run("charge", () => { ran.push(`charge ${order}`); return `ch-${order}`; });
      await step.sleep("pause", "1h");
      return step.run("email", () => { ran.push(`email ${order}`); return `mailed ${order}`; });
    });
    const parked = await shipBefore.using(h().db).enqueue({ order: 1 });
    await invoke(before, clock); // charge; parked at step 2, the pause
    expect(await journal(parked)).toEqual(["charge run done", "pause sleep waiting"]);

    // The deploy: a fraud check before the pause (behind a patch), and the pause renamed "cool-off".
    const after = createApp({ clock: clock.now });
    const answers: string[] = [];
    const shipAfter = after.workflow("order.ship", { args: Order }, async ({ order }, step) => {
      await step.run("charge", () => { ran.push(`charge ${order}`); return `ch-${order}`; });
      const checked = await step.patched("fraud-check");
      answers.push(`${order}: ${checked}, then ${await step.patched("fraud-check")}`); // one answer per run
      if (checked) await step.run("fraud-check", () => { ran.push(`fraud-check ${order}`); return "clean"; });
      await step.sleep({ name: "cool-off", formerly: ["pause"] }, "1h");
      return step.run("email", () => { ran.push(`email ${order}`); return `mailed ${order} (${checked ? "checked" : "unchecked"})`; });
    });
    const fresh = await shipAfter.using(h().db).enqueue({ order: 2 });
    clock.advance(HOUR);
    await invoke(after, clock); // the old run: past its pause (now "cool-off"), emails; the new one checks and parks
    expect(await job(parked)).toMatchObject({ state: "succeeded", result: "mailed 1 (unchecked)" });
    expect(await journal(parked)).toEqual(["charge run done", "pause sleep done", "email run done"]);
    expect(await journal(fresh)).toEqual(["charge run done", "patch:fraud-check patch done", "fraud-check run done", "cool-off sleep waiting"]);

    clock.advance(HOUR);
    await invoke(after, clock); // the new run replays its patch (true again) and finishes
    expect(await job(fresh)).toMatchObject({ state: "succeeded", result: "mailed 2 (checked)" });
    const third = await shipAfter.using(h().db).enqueue({ order: 3 });
    await invoke(after, clock); // takes the patch, parks at cool-off

    // A later deploy keeps the fraud check and drops the patch: the marker takes no position, the replay holds.
    const later = createApp({ clock: clock.now });
    later.workflow("order.ship", { args: Order }, async ({ order }, step) => {
      await step.run("charge", () => { ran.push(`charge ${order}`); return `ch-${order}`; });
      await step.run("fraud-check", () => { ran.push(`fraud-check ${order}`); return "clean"; });
      await step.sleep("cool-off", "1h");
      return step.run("email", () => { ran.push(`email ${order}`); return `mailed ${order} (checked)`; });
    });
    clock.advance(HOUR);
    await invoke(later, clock);
    expect(await job(third)).toMatchObject({ state: "succeeded", result: "mailed 3 (checked)" });
    expect(await journal(third)).toEqual(["charge run done", "patch:fraud-check patch done", "fraud-check run done", "cool-off sleep done", "email run done"]);
    expect(ran.sort()).toEqual(["charge 1", "charge 2", "charge 3", "email 1", "email 2", "email 3", "fraud-check 2", "fraud-check 3"]); // each step ran once
    expect(answers.sort()).toEqual(["1: false, then false", "2: true, then true", "2: true, then true", "3: true, then true"]);
  });

  it("a run started on version 1 keeps version 1's handler after version 2 is deployed; a run whose version is gone fails saying which, and runs again once it is back", async () => {
    const clock = new ManualClock();
    const Trip = v.object({ hours: v.number() });
    const v1: WorkflowHandler<typeof Trip, string> = async ({ hours }, step) => {
      await step.run("quote", () => "q1");
      await step.sleep("wait", `${hours}h`);
      return step.run("book", () => `v1 booked after ${hours}h`);
    };
    const v2: WorkflowHandler<typeof Trip, string> = async (_args, step) => {
      const [hotel, flight] = await Promise.all([step.run("hotel", () => "h2"), step.run("flight", () => "f2")]);
      await step.sleep("hold", "1h");
      return `v2 booked ${hotel} and ${flight}`;
    };
    const v3: WorkflowHandler<typeof Trip, string> = async () => "v3";

    const before = createApp({ clock: clock.now });
    const trip1 = before.workflow("trip.book", { args: Trip }, v1);
    const soon = await trip1.using(h().db).enqueue({ hours: 1 });
    const late = await trip1.using(h().db).enqueue({ hours: 48 });
    await invoke(before, clock);
    expect(await journal(soon)).toEqual(["quote run done", "wait sleep waiting"]); // an unversioned workflow records no version

    // Version 2 rewrites the workflow and keeps version 1's handler for the runs that started on it.
    const after = createApp({ clock: clock.now });
    const fresh = await after.workflow("trip.book", { args: Trip, version: 2, previous: { 1: v1 } }, v2).using(h().db).enqueue({ hours: 0 });
    clock.advance(HOUR);
    await invoke(after, clock);
    expect(await job(soon)).toMatchObject({ state: "succeeded", result: "v1 booked after 1h" });
    expect(await journal(soon)).toEqual(["quote run done", "wait sleep done", "book run done"]);
    expect(await journal(fresh)).toEqual(["(version) version done 2", "hotel run done", "flight run done", "hold sleep waiting"]);
    expect(await job(late)).toMatchObject({ state: "queued" }); // still parked on version 1

    // Version 3 drops version 1 too early: the run still on it fails, naming its version and the code's.
    const third = createApp({ clock: clock.now });
    third.workflow("trip.book", { args: Trip, version: 3, previous: { 2: v2 } }, v3);
    clock.advance(47 * HOUR);
    await invoke(third, clock);
    expect(await job(fresh)).toMatchObject({ state: "succeeded", result: "v2 booked h2 and f2" });
    const failed = await job(late);
    expect(failed.state).toBe("failed");
    expect(failed.errors.at(-1)).toMatchObject({ kind: "WorkflowVersionMissing", message: 'workflow "trip.book": this run started on version 1, which this code ' +
      "no longer has (it has versions 3, 2): deploy code that keeps version 1's handler under `previous`, then requeue the job" });

    // The fix: version 1 back under previous, and the job requeued.
    const fixed = createApp({ clock: clock.now });
    fixed.workflow("trip.book", { args: Trip, version: 3, previous: { 1: v1, 2: v2 } }, v3);
    expect(await requeue(h().db, late)).toBe(true);
    await invoke(fixed, clock);
    expect(await job(late)).toMatchObject({ state: "succeeded", result: "v1 booked after 48h" });
  });

  it("a renamed event wait still gets its event, and a renamed step that was retrying goes on with its attempts", async () => {
    const clock = new ManualClock();
    const before = createApp({ clock: clock.now });
    const refund = before.workflow("refund", { backoff: () => "1m" }, async (_a, step) => {
      const decision = await step.waitForEvent<{ ok: boolean }>("approval", { event: "refund.decided", timeout: "1d" });
      return step.run("pay", ({ attempt }) => { if (attempt === 1) throw new Error("bank down"); return `paid ${decision?.ok} on attempt ${attempt}`; });
    });
    const waiting = await refund.using(h().db).enqueue({});
    const retrying = await refund.using(h().db).enqueue({});
    await invoke(before, clock); // both wait for the event
    await sendEvent(h().db, "refund.decided", { ok: true }, { now: clock.now() }); // reaches both
    const decidedLater = await refund.using(h().db).enqueue({});
    await invoke(before, clock); // both pay; the bank is down: retrying in 1 m. The third waits.
    expect(await journal(retrying)).toEqual(["approval event done", "pay run retrying"]);
    expect(await journal(decidedLater)).toEqual(["approval event waiting"]);

    const after = createApp({ clock: clock.now });
    after.workflow("refund", { backoff: () => "1m" }, async (_a, step) => {
      const decision = await step.waitForEvent<{ ok: boolean }>({ name: "decision", formerly: ["approval"] }, { event: "refund.decided", timeout: "1d" });
      return step.run({ name: "pay-out", formerly: ["pay"] }, ({ attempt }) => `paid ${decision?.ok} on attempt ${attempt}`);
    });
    expect(await sendEvent(h().db, "refund.decided", { ok: false }, { now: clock.now() })).toEqual({ delivered: 1, woken: 1 });
    clock.advance(60_000);
    await invoke(after, clock);
    expect(await job(waiting)).toMatchObject({ state: "succeeded", result: "paid true on attempt 2" });
    expect(await job(retrying)).toMatchObject({ state: "succeeded", result: "paid true on attempt 2" });
    expect(await job(decidedLater)).toMatchObject({ state: "succeeded", result: "paid false on attempt 1" });
    // A step stored before the deploy keeps its old name; one the run reaches after it takes the new name.
    expect(await journal(decidedLater)).toEqual(["approval event done", "pay-out run done"]);
    expect(await journal(retrying)).toEqual(["approval event done", "pay run done"]);
  });

  it("a step name and its former names are checked, and a name a patch marker holds is not a step's", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const bad = await app.workflow("bad-formerly", async (_a, step) => step.run({ name: "x", formerly: "y" } as never, () => 1)).using(h().db).enqueue({});
    const badId = await app.workflow("bad-patch", async (_a, step) => step.patched("")).using(h().db).enqueue({});
    const clash = await app.workflow("clash", async (_a, step) => {
      await step.patched("audit");
      await step.run("patch:audit", () => 1);
    }).using(h().db).enqueue({});
    await invoke(app, clock);
    expect((await job(bad)).errors.at(-1)).toMatchObject({ kind: "StepMisuse", message: "a step name must be a string or { name, formerly: [former names] }" });
    expect((await job(badId)).errors.at(-1)).toMatchObject({ kind: "StepMisuse", message: expect.stringMatching(/^Invalid patch id/) });
    expect((await job(clash)).errors.at(-1)).toMatchObject({ kind: "WorkflowNondeterminism", message: expect.stringMatching(/^step name "patch:audit" is used twice/) });
  });
});
