// A process's first claim, before any claim told it whether limits exist, a queued job must be cancelled or keyed
// jobs are queued: a draining invocation sends it without the limit, stop and fair CTEs (a claim that takes no
// limited or keyed job and runs no job to cancel) and, told that it needed them, claims again at once with them;
// an invocation of one claim (`drain: false`) cannot, so its claim carries them. Every driver for the behaviour;
// the statements on node-postgres.
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import * as v from "valibot";
import { createApp, runOnce, setLimit } from "../../src/index.js";
import { memoryOf } from "../../src/runtime/process-memory.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { isClaim, statementsSent } from "../support/statements.js";

const LIMIT_CTES = "limit_full as (";
const STOP_CTES = "stops_not_due as (";
const FAIR_CTES = "fair_candidates as (";
const PLAIN_SCAN = "unlimited_candidates as (";
const URGENT_READ = "fair_more as (";

function limitedApp(clock: ManualClock) {
  const app = createApp({ clock: clock.now });
  const ran: string[] = [];
  const task = app.task("vendor.call", { args: v.object({ n: v.string() }) }, async ({ n }) => { ran.push(n); });
  return { app, task, ran };
}

forEachDriver((h) => {
  it("a fresh process's draining invocation runs limited jobs and cancels an expired one unrun, learning both from its first claim", async () => {
    const clock = new ManualClock();
    await setLimit(h().db, "vendor", { maxRunning: 2 });
    const { app, task, ran } = limitedApp(clock);
    await task.using(h().db, { limitKey: "vendor" }).enqueueMany([{ n: "a" }, { n: "b" }]);
    await task.using(h().db).enqueue({ n: "plain" });
    await task.using(h().db, { expiresAt: new Date(clock.now().getTime() + 1000) }).enqueue({ n: "expired" });
    clock.advance(5000);
    expect(memoryOf(app)).toMatchObject({ limits: null, stops: null });
    const summary = await runOnce(app, { db: h().db, now: clock.now });
    expect(summary).toMatchObject({ succeeded: 3, cancelled: 1 });
    expect(ran.sort()).toEqual(["a", "b", "plain"]);
    expect(memoryOf(app).limits).toBe(true);
  });

  it("a fresh process's draining invocation shares keyed jobs fairly from the first claim that takes any", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    const task = app.task("tenant.work", { args: v.object({ tenant: v.string() }) }, async ({ tenant }) => { ran.push(tenant); });
    await task.using(h().db, { fairKey: "burst" }).enqueueMany(Array.from({ length: 100 }, () => ({ tenant: "burst" })));
    await task.using(h().db, { fairKey: "small" }).enqueueMany([{ tenant: "small" }, { tenant: "small" }]);
    const summary = await runOnce(app, { db: h().db, now: clock.now, batchSize: 10, slots: 10 });
    expect(summary.succeeded).toBe(102);
    expect(ran.slice(0, 10).filter((t) => t === "small")).toHaveLength(2);
    expect(memoryOf(app).fair).toBe(true);
  });

  it("a process whose queued jobs all had turns runs a job without a key, and a keyed one parked till due, in the invocation that finds them", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    const task = app.task("tenant.work", { args: v.object({ tenant: v.string() }) }, async ({ tenant }) => { ran.push(tenant); });
    await task.using(h().db, { fairKey: "a" }).enqueueMany([{ tenant: "a" }, { tenant: "a" }]);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 2 });
    expect(memoryOf(app).plainDue).toBe(false);
    await task.using(h().db, { fairKey: "b" }).enqueueMany([{ tenant: "b" }, { tenant: "b" }]);
    await task.using(h().db).enqueue({ tenant: "none" });
    await task.using(h().db, { fairKey: "c", delay: "1m" }).enqueue({ tenant: "c" });
    ran.length = 0;
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 3 });
    expect(ran.sort()).toEqual(["b", "b", "none"]);
    clock.advance(61_000);
    ran.length = 0;
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 1 });
    expect(ran).toEqual(["c"]);
  });

  it("a fresh process's invocation of one claim (drain: false) takes a limited job in that claim", async () => {
    const clock = new ManualClock();
    await setLimit(h().db, "vendor", { maxRunning: 1 });
    const { app, task, ran } = limitedApp(clock);
    await task.using(h().db, { limitKey: "vendor" }).enqueue({ n: "limited" });
    const summary = await runOnce(app, { db: h().db, now: clock.now, drain: false });
    expect(summary).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(ran).toEqual(["limited"]);
  });
});

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("first_claim_hints"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

it("a draining invocation's first claim goes without the limit and stop CTEs; the claim after one that found a limit and an expired job carries them", async () => {
  const clock = new ManualClock();
  await setLimit(t.db, "vendor", { maxRunning: 1 });
  const { app, task } = limitedApp(clock);
  await task.using(t.db, { limitKey: "vendor" }).enqueue({ n: "limited" });
  await task.using(t.db, { expiresAt: new Date(clock.now().getTime() + 1000) }).enqueue({ n: "expiring" });
  clock.advance(5000);
  const claims = await statementsSent(t.pool, isClaim, () => runOnce(app, { db: t.db, now: clock.now }));
  expect(claims.length).toBeGreaterThanOrEqual(2);
  expect(claims[0]!.text).not.toContain(LIMIT_CTES);
  expect(claims[0]!.text).not.toContain(STOP_CTES);
  expect(claims[1]!.text).toContain(LIMIT_CTES);
  expect(claims[1]!.text).toContain(STOP_CTES);
});

it("a draining invocation's first claim goes without the fair walk and takes no keyed job; the next, sent at once, walks the keys", async () => {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  const task = app.task("tenant.work", { args: v.object({}) }, async () => {});
  await task.using(t.db, { fairKey: "tenant" }).enqueueMany([{}, {}]);
  let summary: Awaited<ReturnType<typeof runOnce>> | undefined;
  const claims = await statementsSent(t.pool, isClaim, async () => { summary = await runOnce(app, { db: t.db, now: clock.now }); });
  expect(claims[0]!.text).not.toContain(FAIR_CTES);
  expect(claims[0]!.text).toContain("and j.fair_key is null");
  expect(claims[1]!.text).toContain(FAIR_CTES);
  expect(claims[1]!.text).not.toContain("and j.fair_key is null");
  expect(summary).toMatchObject({ succeeded: 2 });
});

it("an invocation of one claim (drain: false) in a fresh process carries the limit and stop CTEs", async () => {
  const { app } = limitedApp(new ManualClock());
  const claims = await statementsSent(t.pool, isClaim, () => runOnce(app, { db: t.db, drain: false }));
  expect(claims).toHaveLength(1);
  expect(claims[0]!.text).toContain(LIMIT_CTES);
  expect(claims[0]!.text).toContain(STOP_CTES);
  expect(claims[0]!.text).toContain(FAIR_CTES);
});

it("a fair claim by turns leaves the plain scan out while no job without a turn is due, and the claim after one that saw such a job due carries it", async () => {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  const task = app.task("tenant.work", { args: v.object({}) }, async () => {});
  await task.using(t.db, { fairKey: "a" }).enqueueMany([{}, {}]);
  await runOnce(app, { db: t.db, now: clock.now });
  await task.using(t.db, { fairKey: "b" }).enqueueMany([{}, {}]);
  await task.using(t.db).enqueue({});
  let summary: Awaited<ReturnType<typeof runOnce>> | undefined;
  const claims = await statementsSent(t.pool, isClaim, async () => { summary = await runOnce(app, { db: t.db, now: clock.now }); });
  expect(claims[0]!.text).toContain(FAIR_CTES);
  expect(claims[0]!.text).not.toContain(PLAIN_SCAN);
  expect(claims[1]!.text).toContain(PLAIN_SCAN);
  expect(summary).toMatchObject({ succeeded: 3 });
});

it("a fair claim by turns reads on past its turns for urgent jobs only after a claim whose turns spanned priorities", async () => {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  const task = app.task("tenant.work", { args: v.object({}) }, async () => {});
  await task.using(t.db, { fairKey: "a" }).enqueueMany([{}, {}]);
  await runOnce(app, { db: t.db, now: clock.now });
  expect(memoryOf(app).fairPriorities).toBe(false);
  await task.using(t.db, { fairKey: "b" }).enqueueMany([{}, {}, {}]);
  await task.using(t.db, { fairKey: "b", priority: 5 }).enqueue({});
  const claims = await statementsSent(t.pool, isClaim, () => runOnce(app, { db: t.db, now: clock.now, batchSize: 2, slots: 2 }));
  expect(claims[0]!.text).toContain(FAIR_CTES);
  expect(claims[0]!.text).not.toContain(URGENT_READ);
  expect(claims[1]!.text).toContain(URGENT_READ);
});
