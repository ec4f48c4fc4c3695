// Fairness by tenant, then sub-key, with weights (issue 40, item 6): a tenant that spreads its backlog over many
// sub-keys still gets one tenant's share of a claim, its sub-keys take turns within that share from claim to
// claim, a tenant of weight 3 gets three jobs for another's one, and limits still hold.
import { expect, it } from "vitest";
import * as v from "valibot";
import { cancelJobs, createApp, getJob, InvalidInput, listFairWeights, runOnce, setFairWeight, setLimit, type Db } from "../../../src/index.js";
import { forEachDriver } from "../../support/drivers.js";

const Work = v.object({ tenant: v.string(), sub: v.string() });

/** An app whose one task records the tenant and sub-key of each run, in start order. */
function tenantApp() {
  const app = createApp();
  const ran: { tenant: string; sub: string }[] = [];
  const work = app.task("tenant.work", { args: Work }, async (args) => { ran.push(args); });
  return { app, work, ran };
}

type Task = ReturnType<typeof tenantApp>["work"];

/** `count` jobs of `tenant` under `sub` (no sub-key when `sub` is ""). */
async function enqueue(db: Db, work: Task, tenant: string, sub: string, count: number, options: { limitKey?: string } = {}) {
  return work.using(db, { fairKey: tenant, ...(sub === "" ? {} : { fairSubKey: sub }), ...options })
    .enqueueMany(Array.from({ length: count }, () => ({ tenant, sub })));
}

const count = (ran: { tenant: string }[], tenant: string) => ran.filter((r) => r.tenant === tenant).length;

/**
 * A claim that takes nothing (no job is in its queue) but walks the tenants: a process walks sub-keys once one of
 * its fair claims has met a tenant that has them (before that, a tenant offers its first key's jobs).
 */
async function learnSubKeys(app: ReturnType<typeof createApp>, db: Db) {
  expect(await runOnce(app, { db, queues: ["no-such-queue"], drain: false })).toMatchObject({ claimed: 0 });
}

forEachDriver((h) => {
  it("a tenant that spreads 1,000 jobs over 100 sub-keys gets one tenant's share: a claim of 10 beside 4 small tenants gives each small tenant 2", async () => {
    const { app, work, ran } = tenantApp();
    for (let i = 0; i < 100; i++) await enqueue(h().db, work, "acme", `repo-${String(i).padStart(3, "0")}`, 10);
    for (const tenant of ["beta", "gamma", "delta", "omega"]) await enqueue(h().db, work, tenant, "", 5);
    await learnSubKeys(app, h().db);

    await runOnce(app, { db: h().db, batchSize: 10, slots: 10, drain: false });
    expect(ran).toHaveLength(10);
    // Five tenants walked, two jobs each: acme's 100 keys count as one tenant (a flat walk over keys would
    // have spent most of the batch on acme's keys).
    for (const tenant of ["acme", "beta", "gamma", "delta", "omega"]) expect(count(ran, tenant)).toBe(2);
    // acme's two are from two different sub-keys.
    expect(new Set(ran.filter((r) => r.tenant === "acme").map((r) => r.sub)).size).toBe(2);
  });

  it("a tenant's sub-keys take turns from claim to claim: 30 claims of its share of 2 reach all 60 of its sub-keys, one job each", async () => {
    const { app, work, ran } = tenantApp();
    for (let i = 0; i < 60; i++) await enqueue(h().db, work, "acme", `repo-${String(i).padStart(2, "0")}`, 3);
    await enqueue(h().db, work, "beta", "", 200);
    await learnSubKeys(app, h().db);

    for (let claim = 0; claim < 30; claim++) await runOnce(app, { db: h().db, batchSize: 4, slots: 4, drain: false });
    const acme = ran.filter((r) => r.tenant === "acme").map((r) => r.sub);
    expect(acme).toHaveLength(60);
    // Every sub-key once before any twice: the tenant's own cursor moves on past the keys it walked.
    expect(new Set(acme).size).toBe(60);
    expect(count(ran, "beta")).toBe(60);
  });

  it("a process learns sub-keys from one claim that walks 40 tenants, from a tenant far down the walk whose keys are all sub-keys", async () => {
    const { app, work, ran } = tenantApp();
    for (let i = 0; i < 39; i++) await enqueue(h().db, work, `t${String(i).padStart(2, "0")}`, "", 3);
    await enqueue(h().db, work, "zeta", "a", 5);
    await enqueue(h().db, work, "zeta", "b", 5);
    await learnSubKeys(app, h().db); // zeta is walked 40th: seen by its first key, not by a sampled probe
    await runOnce(app, { db: h().db, batchSize: 80, slots: 80, drain: false });
    // Each tenant's share is 2; zeta's two come from its two sub-keys (unlearned, both would be its first key's).
    expect(ran.filter((r) => r.tenant === "zeta").map((r) => r.sub).sort()).toEqual(["a", "b"]);
  });

  it("a tenant's first sub-key with one job and a sub-key with a burst share the tenant's turns", async () => {
    const { app, work, ran } = tenantApp();
    await enqueue(h().db, work, "acme", "", 1);
    await enqueue(h().db, work, "acme", "bulk", 500);
    await enqueue(h().db, work, "acme", "urgent", 2);
    await learnSubKeys(app, h().db);
    await runOnce(app, { db: h().db, batchSize: 3, slots: 3, drain: false });
    // One tenant walked (share 3): its three keys, its own jobs without a sub-key among them, one each.
    expect(ran.map((r) => r.sub).sort()).toEqual(["", "bulk", "urgent"]);
  });

  it("a process's first fair claim takes turns by key, each sub-key one; once it has met sub-keys, its claims walk the tenants", async () => {
    const { app, work, ran } = tenantApp();
    for (const repo of ["a", "b", "c"]) await enqueue(h().db, work, "acme", repo, 5);
    await enqueue(h().db, work, "beta", "", 5);
    await runOnce(app, { db: h().db, batchSize: 4, slots: 4, drain: false });
    // By turns, each of acme's sub-keys counts as a key of its own: three of the four turns are acme's.
    expect(count(ran, "acme")).toBe(3);
    ran.length = 0;
    await runOnce(app, { db: h().db, batchSize: 4, slots: 4, drain: false });
    // The claim met sub-keys, so the next walks tenants: acme's share is two jobs, of two of its sub-keys.
    expect({ acme: count(ran, "acme"), beta: count(ran, "beta") }).toEqual({ acme: 2, beta: 2 });
    expect(new Set(ran.filter((r) => r.tenant === "acme").map((r) => r.sub)).size).toBe(2);
  });

  it("weights: a tenant of weight 3 gets 3 jobs of a claim for each of another's 1; null takes it back to 1", async () => {
    const { app, work, ran } = tenantApp();
    await enqueue(h().db, work, "gold", "", 300);
    await enqueue(h().db, work, "free", "", 300);
    expect(await setFairWeight(h().db, "gold", 3)).toEqual({ key: "gold", weight: 3 });
    expect(await listFairWeights(h().db)).toEqual([{ key: "gold", weight: 3 }]);

    await runOnce(app, { db: h().db, batchSize: 8, slots: 8, drain: false });
    expect({ gold: count(ran, "gold"), free: count(ran, "free") }).toEqual({ gold: 6, free: 2 });

    await setFairWeight(h().db, "gold", null);
    expect(await listFairWeights(h().db)).toEqual([]);
    ran.length = 0;
    await runOnce(app, { db: h().db, batchSize: 8, slots: 8, drain: false });
    expect({ gold: count(ran, "gold"), free: count(ran, "free") }).toEqual({ gold: 4, free: 4 });
  });

  it("limits hold under two-level keys: a sub-key under maxRunning 1 offers one job however large the tenant's share", async () => {
    const { app, work, ran } = tenantApp();
    await setLimit(h().db, "vendor", { maxRunning: 1 });
    await enqueue(h().db, work, "acme", "limited", 20, { limitKey: "vendor" });
    await enqueue(h().db, work, "acme", "free", 20);
    await enqueue(h().db, work, "beta", "", 20);
    await learnSubKeys(app, h().db);
    const summary = await runOnce(app, { db: h().db, batchSize: 10, slots: 10, drain: false });
    expect(summary.claimed).toBe(10);
    expect(ran.filter((r) => r.sub === "limited")).toHaveLength(1);
    expect(count(ran, "beta")).toBe(5);
  });

  it("getJob shows the tenant and the sub-key; a selection by fairKey takes the tenant's jobs of every sub-key", async () => {
    const { work } = tenantApp();
    const [id] = await enqueue(h().db, work, "acme", "repo-1", 1);
    await enqueue(h().db, work, "acme", "", 1);
    await enqueue(h().db, work, "acme", "repo-2", 1);
    await enqueue(h().db, work, "acmeish", "", 1);
    expect(await getJob(h().db, id!)).toMatchObject({ fairKey: "acme", fairSubKey: "repo-1" });
    expect(await cancelJobs(h().db, { fairKey: "acme" }, { dryRun: true })).toBe(3);
  });

  it("bad keys and weights are refused with a clear error and change nothing", async () => {
    const { work } = tenantApp();
    await expect(work.using(h().db, { fairSubKey: "repo-1" }).enqueue({ tenant: "x", sub: "y" })).rejects.toThrow(/fairSubKey .*fairKey/);
    await expect(work.using(h().db, { fairKey: "a\u0001b" }).enqueue({ tenant: "x", sub: "y" })).rejects.toThrow(InvalidInput);
    await expect(work.using(h().db, { fairKey: "a", fairSubKey: "b\u0002" }).enqueue({ tenant: "x", sub: "y" })).rejects.toThrow(/\\u0001 or \\u0002/);
    await expect(work.using(h().db, { fairKey: "a", fairSubKey: "" }).enqueue({ tenant: "x", sub: "y" })).rejects.toThrow(InvalidInput);
    for (const weight of [0, 1001, 2.5, -1, "3" as unknown as number]) {
      await expect(setFairWeight(h().db, "acme", weight)).rejects.toThrow(InvalidInput);
    }
    await expect(setFairWeight(h().db, "", 2)).rejects.toThrow(InvalidInput);
    expect(await h().rows("select id from akadze.all_jobs")).toEqual([]);
    expect(await listFairWeights(h().db)).toEqual([]);
  });
});
