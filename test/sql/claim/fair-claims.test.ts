// Fair claims (issue 27, item 1): a claim shares its batch across the fairness keys with due jobs, so one
// key's backlog never makes another key wait behind it; priorities still come first; limits still hold; every
// job runs once under concurrent invocations.
import { expect, it } from "vitest";
import * as v from "valibot";
import { createApp, getJob, InvalidInput, requeue, runOnce, setLimit, type Db } from "../../../src/index.js";
import { queryJson } from "../../../src/db/query.js";
import { claimJobsStatement } from "../../../src/sql/claim/claim.js";
import { claimResultOf, type ClaimAnswer } from "../../../src/sql/claim/claim-answer.js";
import { timestamp } from "../../../src/sql/time.js";
import { forEachDriver } from "../../support/drivers.js";
import { ManualClock } from "../../support/clock.js";

const Tenant = v.object({ tenant: v.string() });

/** An app whose one task records which tenant each run belongs to, and each job's runs. */
function tenantApp() {
  const app = createApp();
  const ran: string[] = [];
  const runsById = new Map<number, number>();
  const work = app.task("tenant.work", { args: Tenant }, async ({ tenant }, job) => {
    ran.push(tenant);
    runsById.set(job.id, (runsById.get(job.id) ?? 0) + 1);
  });
  return { app, work, ran, runsById };
}

type Work = ReturnType<typeof tenantApp>["work"];

/** `count` jobs of `tenant`, under its fairness key unless `fair` is false. */
async function enqueueTenant(db: Db, work: Work, tenant: string, count: number, fair = true): Promise<number[]> {
  return work.using(db, fair ? { fairKey: tenant } : {}).enqueueMany(Array.from({ length: count }, () => ({ tenant })));
}

/** `rounds` rounds of `invocations` concurrent invocations, each one claim of `batchSize`. */
async function claimRounds(app: ReturnType<typeof createApp>, db: Db, rounds: number, invocations: number, batchSize: number) {
  for (let round = 0; round < rounds; round++) {
    await Promise.all(Array.from({ length: invocations }, () => runOnce(app, { db, batchSize, slots: batchSize, drain: false })));
  }
}

forEachDriver((h) => {
  it("one key's 50,000 queued jobs and 100 keys of 10, 4 concurrent invocations: the small keys' jobs are all claimed within 2 claims each, every job once", async () => {
    const { app, work, ran, runsById } = tenantApp();
    await enqueueTenant(h().db, work, "big", 50_000);
    for (let i = 0; i < 100; i++) await enqueueTenant(h().db, work, `small-${String(i).padStart(3, "0")}`, 10);

    await claimRounds(app, h().db, 1, 4, 250);
    const afterOne = ran.filter((t) => t !== "big").length;
    await claimRounds(app, h().db, 1, 4, 250);
    const small = ran.filter((t) => t !== "big").length;
    // 8 claims of 250 took 2,000 jobs: all 1,000 of the small keys', and the big key's share beside them.
    expect(ran).toHaveLength(2_000);
    expect(small).toBe(1_000);
    // Already the first round (one claim per invocation) served most of them: each claim's 250 jobs hold every
    // key's first two (202 with the big key's), so 4 claims give each small key at least 8 of its 10.
    expect(afterOne).toBeGreaterThanOrEqual(800);
    expect([...runsById.values()].every((n) => n === 1)).toBe(true);
    expect(runsById.size).toBe(2_000);
  });

  it("a walk over 600 keys of 2 jobs serves 250 distinct keys a claim and reaches every key within 3 claims", async () => {
    const { app, work, ran } = tenantApp();
    for (let i = 0; i < 600; i++) await enqueueTenant(h().db, work, `t${String(i).padStart(3, "0")}`, 2);
    const perClaim: string[][] = [];
    for (let claim = 0; claim < 3; claim++) {
      const before = ran.length;
      await claimRounds(app, h().db, 1, 1, 250);
      perClaim.push(ran.slice(before));
    }
    expect(perClaim.map((c) => c.length)).toEqual([250, 250, 250]);
    expect(perClaim.map((c) => new Set(c).size)).toEqual([250, 250, 250]);
    expect(new Set(ran).size).toBe(600);
    // Round robin: the second claim goes on after the first one's last key.
    expect(perClaim[1].every((t) => !perClaim[0].includes(t))).toBe(true);
  });

  it("priority comes first across keys; within a key its own order holds; a key's higher-priority jobs count toward its turn", async () => {
    const app = createApp();
    const order: string[] = [];
    const work = app.task("tenant.work", { args: v.object({ tag: v.string() }) }, async ({ tag }) => { order.push(tag); });
    await work.using(h().db, { fairKey: "a" }).enqueueMany([{ tag: "a1" }, { tag: "a2" }, { tag: "a3" }]);
    await work.using(h().db, { fairKey: "b" }).enqueueMany([{ tag: "b1" }, { tag: "b2" }, { tag: "b3" }]);
    await work.using(h().db, { fairKey: "b", priority: 5 }).enqueueMany([{ tag: "b-urgent-1" }, { tag: "b-urgent-2" }]);
    // One claim of 5, one slot, so the jobs run in claim order. b's urgent jobs go first; then a's first two
    // (b's next is its third in turn); the third turn goes by walk order, a before b.
    await runOnce(app, { db: h().db, batchSize: 5, slots: 1, drain: false });
    expect(order).toEqual(["b-urgent-1", "b-urgent-2", "a1", "a2", "a3"]);
  });

  it("jobs without a key share the batch as one more key, and a key over its maxRunning limit offers only its room", async () => {
    const { app, work, ran } = tenantApp();
    await setLimit(h().db, "vendor", { maxRunning: 2 });
    await work.using(h().db, { fairKey: "limited", limitKey: "vendor" }).enqueueMany(Array.from({ length: 10 }, () => ({ tenant: "limited" })));
    await enqueueTenant(h().db, work, "plain", 30, false);
    await enqueueTenant(h().db, work, "t1", 30);
    await runOnce(app, { db: h().db, batchSize: 12, slots: 12, drain: false });
    const count = (t: string) => ran.filter((x) => x === t).length;
    expect(ran).toHaveLength(12);
    expect(count("limited")).toBe(2);
    expect(count("plain")).toBe(5);
    expect(count("t1")).toBe(5);
  });

  it("the key is stored with the job: getJob shows it, a retry and a requeue keep it, and claims stay fair after them", async () => {
    const app = createApp();
    let fail = true;
    const work = app.task("tenant.flaky", { args: Tenant, maxAttempts: 1 }, async () => { if (fail) throw new Error("down"); });
    const [id] = await work.using(h().db, { fairKey: "acme" }).enqueueMany([{ tenant: "acme" }]);
    expect((await getJob(h().db, id))?.fairKey).toBe("acme");
    await runOnce(app, { db: h().db });
    expect(await getJob(h().db, id)).toMatchObject({ state: "failed", fairKey: "acme" });
    await requeue(h().db, id);
    expect(await getJob(h().db, id)).toMatchObject({ state: "queued", fairKey: "acme" });
    fail = false;
    await runOnce(app, { db: h().db });
    expect(await getJob(h().db, id)).toMatchObject({ state: "succeeded", fairKey: "acme" });
  });

  it("50 keys whose jobs are all delayed and a 1,000-job burst: a small tenant's 2 due jobs are served in the first claim of 10", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    const work = app.task("tenant.work", { args: Tenant }, async ({ tenant }) => { ran.push(tenant); });
    // Key order puts the burst first, the delayed keys next and the small tenant last: a walk that counted
    // the delayed keys would spend every claim's 10 turns on the burst and them.
    await work.using(h().db, { fairKey: "burst" }).enqueueMany(Array.from({ length: 1_000 }, () => ({ tenant: "burst" })));
    for (let i = 0; i < 50; i++) {
      const tenant = `delayed-${String(i).padStart(2, "0")}`;
      await work.using(h().db, { fairKey: tenant, delay: "1h" }).enqueueMany([{ tenant }, { tenant }, { tenant }]);
    }
    await work.using(h().db, { fairKey: "small" }).enqueueMany([{ tenant: "small" }, { tenant: "small" }]);

    const first = await runOnce(app, { db: h().db, now: clock.now, batchSize: 10, slots: 10, drain: false });
    expect(first.claimed).toBe(10);
    expect(ran.filter((t) => t === "small")).toHaveLength(2);
    expect(ran.filter((t) => t === "burst")).toHaveLength(8);
    // The delayed jobs wait for their time, and then get their turns.
    clock.advance(60 * 60_000);
    ran.length = 0;
    await runOnce(app, { db: h().db, now: clock.now, batchSize: 100, slots: 100, drain: false });
    expect(new Set(ran.filter((t) => t.startsWith("delayed-"))).size).toBe(50);
  });

  it("a tenant's burst queued for later takes turns once due beside the others, not every turn the claims passed meanwhile", async () => {
    // (The clock near the database's: a job is parked while it is not due by the database's clock.)
    const clock = new ManualClock(new Date());
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    const work = app.task("tenant.work", { args: Tenant }, async ({ tenant }) => { ran.push(tenant); });
    await work.using(h().db, { fairKey: "steady" }).enqueueMany(Array.from({ length: 500 }, () => ({ tenant: "steady" })));
    await work.using(h().db, { fairKey: "later", delay: "1h" }).enqueueMany(Array.from({ length: 300 }, () => ({ tenant: "later" })));
    // Twenty claims take steady's first 200 turns while later's jobs wait.
    for (let claim = 0; claim < 20; claim++) await runOnce(app, { db: h().db, now: clock.now, batchSize: 10, slots: 10, drain: false });
    expect(ran.filter((t) => t === "steady")).toHaveLength(200);
    clock.advance(60 * 60_000);
    await work.using(h().db, { fairKey: "small" }).enqueueMany([{ tenant: "small" }, { tenant: "small" }]);
    ran.length = 0;
    let smallServed: number | null = null;
    for (let claim = 1; claim <= 5; claim++) {
      await runOnce(app, { db: h().db, now: clock.now, batchSize: 9, slots: 9, drain: false });
      if (smallServed === null && ran.filter((t) => t === "small").length === 2) smallServed = claim;
    }
    expect(ran).toHaveLength(45);
    // (By the app's clock, an hour ahead of the database's, small's jobs were queued parked too. The first claim
    // sees parked jobs due, the second gives them their turns, the third serves them.)
    expect(smallServed).not.toBeNull();
    expect(smallServed).toBeLessThanOrEqual(3);
    // Later's jobs take their turns from then on (about half of each claim beside steady), not the 200 steady took
    // while they waited: given at enqueue, their turns would have put nearly all 43 other jobs of these claims
    // before steady's.
    const later = ran.filter((t) => t === "later").length;
    expect(later).toBeGreaterThanOrEqual(8);
    expect(later).toBeLessThanOrEqual(22);
  });

  it("keys whose due jobs this app cannot run are walked past: a small tenant behind 20 of them and a burst is served within 3 claims of 10", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    const work = app.task("tenant.work", { args: Tenant }, async ({ tenant }) => { ran.push(tenant); });
    const other = createApp({ clock: clock.now }).task("other.work", { args: Tenant }, async () => {});
    await work.using(h().db, { fairKey: "burst" }).enqueueMany(Array.from({ length: 1_000 }, () => ({ tenant: "burst" })));
    for (let i = 0; i < 20; i++) {
      const tenant = `other-${String(i).padStart(2, "0")}`;
      await other.using(h().db, { fairKey: tenant }).enqueueMany([{ tenant }, { tenant }]);
    }
    await work.using(h().db, { fairKey: "small" }).enqueueMany([{ tenant: "small" }, { tenant: "small" }]);
    let firstServed: number | null = null;
    for (let claim = 1; claim <= 3; claim++) {
      await runOnce(app, { db: h().db, now: clock.now, batchSize: 10, slots: 10, drain: false });
      if (firstServed === null && ran.includes("small")) firstServed = claim;
    }
    // 22 keys with due jobs, 10 a claim: the walk reaches the small tenant by the third claim, the burst
    // filling the rest of each batch (a cursor that stayed on the last key served would never get past them).
    expect(firstServed).not.toBeNull();
    expect(firstServed).toBeLessThanOrEqual(3);
    expect(ran).toHaveLength(30);
  });

  it("a bad fairness key is refused with a clear error and enqueues nothing", async () => {
    const { work } = tenantApp();
    for (const fairKey of ["", "x".repeat(201), 7 as unknown as string, "a\u0000b"]) {
      await expect(work.using(h().db, { fairKey }).enqueue({ tenant: "x" })).rejects.toThrow(InvalidInput);
    }
    await expect(work.using(h().db, { fairKey: "" }).enqueue({ tenant: "x" })).rejects.toThrow(/fairKey/);
    expect(await h().rows("select id from akadze.all_jobs")).toEqual([]);
  });
});

forEachDriver((h) => {
  it("without keys (today's plain order) the same 8 claims take the big key's backlog and no small key's job", async () => {
    const { app, work, ran } = tenantApp();
    await enqueueTenant(h().db, work, "big", 50_000, false);
    for (let i = 0; i < 100; i++) await enqueueTenant(h().db, work, `small-${i}`, 10, false);
    await claimRounds(app, h().db, 2, 4, 250);
    expect(ran).toHaveLength(2_000);
    expect(ran.filter((t) => t !== "big")).toHaveLength(0);
  });
}, ["node-postgres"]);

// Two claims open at once need two sessions: PGlite has one connection, and neon-http no transaction that stays open.
forEachDriver((h) => {
  const claim = async (db: Db, owner: string, tasks = ["tenant.work"]) => claimResultOf(await queryJson<ClaimAnswer>(db, claimJobsStatement({
    owner, now: timestamp(null), leaseMs: 30_000, batchSize: 4, startCount: 0, tasks, queues: null, limits: false, fair: true,
  })));

  it("a fair claim holds no more of the keys' jobs than its batch: a second claim beside the open first takes a whole batch of what is left", async () => {
    const { work } = tenantApp();
    for (const tenant of ["k1", "k2", "k3"]) await enqueueTenant(h().db, work, tenant, 3);
    // The cursor's row first (a claim for another task walks the keys and takes nothing): the first claim ever
    // inserts it, and a second claim's insert would wait for that open transaction.
    expect((await claim(h().db, "fair-cursor#1", ["other.task"])).claimed).toEqual([]);
    let first: number[] = [];
    let second: number[] = [];
    await h().db.transaction(async (tx) => {
      first = (await claim(tx as unknown as Db, "fair-first#1")).claimed.map((j) => j.id);
      // The first claim's transaction is still open: every job it locked is skipped by this one.
      second = (await claim(h().db, "fair-second#1")).claimed.map((j) => j.id);
    });
    // Shares of a batch of 4 over 3 keys add up to 4 (2, 1, 1): the first claim locks those and one job of its
    // plain scan, and leaves 4 of the 9. (With every key offering 2, it held 7 to keep 4, and the second got 2.)
    expect(first).toHaveLength(4);
    expect(second).toHaveLength(4);
    expect(new Set([...first, ...second]).size).toBe(8);
  });
}, ["node-postgres", "neon-serverless"]);
