// A claim's plan is costed below JIT's threshold (`jit_above_cost`, 100,000 by default; issue 38): an invocation's
// first claim on a fresh, never-analyzed table (fair and with the limit CTEs), fair claims of a large batch over
// many keys, and a claim over a large backlog of jobs not due yet (which it must not read: they once cost every
// claim, an idle worker's polls too, a scan of them all, and past some 20,000 of them JIT's compilation), each
// captured as the engine sends it and costed with EXPLAIN.
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import * as v from "valibot";
import { createApp, runOnce } from "../../../src/index.js";
import { openTestDatabase, type TestDatabase } from "../../support/database.js";
import { isClaim, statementsSent, type SentStatement } from "../../support/statements.js";
import { indexPagesRead, planNodes, planOf } from "../../support/plan-nodes.js";

// A plan costed above the threshold is compiled by JIT, which costs a claim hundreds of milliseconds: an invocation's
// first claim once took 386 ms that way, and ran out of budget for its second. A process knows neither its keys nor its
// limits yet: its first claim is fair and, in an invocation of one claim (`drain: false`), carries the limit CTEs: on a
// fresh table, the dearest estimate.

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
  expect(first!.text).toContain("fair_candidates as (");
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
  const fair = claims.filter((c) => c.text.includes("fair_candidates as ("));
  expect(fair.length).toBeGreaterThan(0);
  for (const claim of fair) {
    const { cost, threshold } = await costOf(claim);
    expect(cost).toBeLessThan(threshold);
  }
});

it("a claim over 20,000 jobs not due yet is costed below JIT's threshold, reads none of them, takes the due ones and cancels those past their expiry or cancelled", async () => {
  const app = createApp();
  let ran = 0;
  const task = app.task("work", { args: Args }, async () => { ran++; });
  for (let i = 0; i < 20_000; i += 5000) {
    await task.using(t.db, { delay: "1d" }).enqueueMany(Array.from({ length: 5000 }, (_, n) => ({ n: i + n })));
  }
  // (Vacuumed too: the jobs of the tests before, deleted, leave dead entries in the indexes until a vacuum, and a
  // scan steps over those.)
  await t.rows("vacuum analyze akadze.jobs");
  // The claim as the engine sends it, while no job is due.
  const [claim] = await claimsOf(async () => { expect(await runOnce(app, { db: t.db, batchSize: 100, slots: 10, drain: false })).toMatchObject({ claimed: 0 }); });
  // Then 10 due jobs, and two not due for a day that must be cancelled now: one past its expiry, one marked cancelled
  // (a job back in the queue with its cancel request, as a retry or a recovered lease leaves it).
  await task.using(t.db).enqueueMany(Array.from({ length: 10 }, (_, n) => ({ n })));
  await task.using(t.db, { delay: "1d", expiresAt: new Date(Date.now() - 1000) }).enqueue({ n: -1 });
  const [marked] = await t.rows<{ id: string }>("update akadze.jobs set cancel_requested = true where id = (select min(id) from akadze.jobs) returning id");
  const { cost, threshold } = await costOf(claim!);
  expect(cost).toBeLessThan(threshold);
  // Run (rolled back): the pages it read of the claim order's index. The 20,000 delayed jobs fill about 100 pages of
  // it; the claim reads the few of the due jobs.
  const plan = await planOf(t.pool, claim!, true);
  expect(indexPagesRead(plan, "jobs_due_idx")).toBeLessThan(20);
  // The jobs to cancel come from a range of their own index (its expression and the claim's must stay the same text).
  expect(planNodes(plan).some((n) => n["Index Name"] === "jobs_stop_idx" && n["Index Cond"] !== undefined)).toBe(true);
  // This process's last claim saw no job to cancel, so its next one goes without the stop CTEs: it takes the due
  // jobs, leaves the two queued and reports them; the claim after cancels them (claimer.ts, ClaimParams.stops).
  expect(await runOnce(app, { db: t.db, batchSize: 100, slots: 10, drain: false })).toMatchObject({ claimed: 10, cancelled: 0 });
  expect(await runOnce(app, { db: t.db, batchSize: 100, slots: 10, drain: false })).toMatchObject({ claimed: 0, cancelled: 2 });
  expect(ran).toBe(10);
  expect(await t.rows("select state from akadze.all_jobs where id = $1", [marked!.id])).toEqual([{ state: "cancelled" }]);
});
