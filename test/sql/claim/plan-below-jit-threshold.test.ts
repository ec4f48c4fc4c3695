// A claim's plan is costed below JIT's threshold (`jit_above_cost`, 100,000 by default; issue 38): an invocation's
// first claim on a fresh, never-analyzed table (fair and with the limit CTEs) and fair claims of a large batch over
// many keys, each captured as the engine sends it and costed with EXPLAIN.
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import * as v from "valibot";
import { createApp, runOnce } from "../../../src/index.js";
import { openTestDatabase, type TestDatabase } from "../../support/database.js";
import { isClaim, statementsSent, type SentStatement } from "../../support/statements.js";
import { planOf } from "../../support/plan-nodes.js";

// A plan costed above the threshold is compiled by JIT, which costs a claim hundreds of milliseconds: an invocation's
// first claim once took 386 ms that way, and ran out of budget for its second. A process knows neither its keys nor its
// limits yet, so its first claim is fair and carries the limit CTEs: on a fresh table, the dearest estimate.

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("claim_plan_cost"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

/** The claims `run` sends through the pool, as text and values. */
function claimsOf(run: () => Promise<unknown>): Promise<SentStatement[]> {
  return statementsSent(t.pool, isClaim, run);
}

/** The planner's total cost of `claim`, with JIT's threshold as this server has it. */
async function costOf(claim: SentStatement): Promise<{ cost: number; threshold: number }> {
  const [{ c }] = await t.rows<{ c: string }>("select current_setting('jit_above_cost') as c");
  return { cost: (await planOf(t.pool, claim))["Total Cost"]!, threshold: Number(c) };
}

const Args = v.object({ n: v.number() });

it("an invocation's first claim on a fresh table, fair and with the limit CTEs, is costed below JIT's threshold", async () => {
  const app = createApp();
  const task = app.task("work", { args: Args }, async () => {});
  await task.using(t.db).enqueueMany(Array.from({ length: 4000 }, (_, n) => ({ n })));
  const [first] = await claimsOf(() => runOnce(app, { db: t.db, batchSize: 100, slots: 4, drain: false }));
  expect(first!.text).toContain("fair_walk as (");
  expect(first!.text).toContain("limited_candidates as (");
  const { cost, threshold } = await costOf(first!);
  expect(threshold).toBe(100_000);
  expect(cost).toBeLessThan(threshold);
});

it("fair claims of 1,000 over 100 tenants with sub-keys, on an analyzed table, are costed below JIT's threshold, the sub-key walk included", async () => {
  const app = createApp();
  const task = app.task("work", { args: Args }, async () => {});
  for (let tenant = 0; tenant < 100; tenant++) {
    await task.using(t.db, { fairKey: `t${tenant}`, fairSubKey: `s${tenant % 7}` }).enqueueMany(Array.from({ length: 100 }, (_, n) => ({ n })));
  }
  await t.rows("analyze akadze.jobs");
  // The first claim learns that tenants have sub-keys; the next walks them.
  const [learning] = await claimsOf(() => runOnce(app, { db: t.db, batchSize: 1000, slots: 10, drain: false }));
  expect(learning!.text).not.toContain("with recursive walk(");
  const claims = await claimsOf(() => runOnce(app, { db: t.db, batchSize: 1000, slots: 10, drain: false }));
  const fair = claims.filter((c) => c.text.includes("with recursive walk("));
  expect(fair.length).toBeGreaterThan(0);
  for (const claim of [learning!, ...fair]) {
    const { cost, threshold } = await costOf(claim);
    expect(cost).toBeLessThan(threshold);
  }
});

it("a process's first fair claim on an analyzed table whose tenants have no sub-keys is costed below JIT's threshold", async () => {
  const app = createApp();
  const task = app.task("work", { args: Args }, async () => {});
  for (let tenant = 0; tenant < 100; tenant++) await task.using(t.db, { fairKey: `t${tenant}` }).enqueueMany(Array.from({ length: 40 }, (_, n) => ({ n })));
  await t.rows("analyze akadze.jobs");
  const claims = await claimsOf(() => runOnce(app, { db: t.db, batchSize: 250, slots: 10, drain: false }));
  const fair = claims.filter((c) => c.text.includes("fair_walk as ("));
  expect(fair.length).toBeGreaterThan(0);
  for (const claim of fair) {
    const { cost, threshold } = await costOf(claim);
    expect(cost).toBeLessThan(threshold);
  }
});
