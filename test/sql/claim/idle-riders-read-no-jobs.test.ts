// What rides on a claim or a settle reads no job row when it has nothing to do, whatever the planner's statistics
// say (issue 38): the recovery when no owner expired and no job's own expiry passed, and the workers registry when
// a settle ends an invocation's jobs. Each statement is captured as the engine sends it and explained.
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import * as v from "valibot";
import { createApp, runOnce } from "../../../src/index.js";
import { openTestDatabase, type TestDatabase } from "../../support/database.js";
import { isClaim, isSettle, statementsSent } from "../../support/statements.js";
import { planNodes, planOf, type PlanNode } from "../../support/plan-nodes.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("idle_riders"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

/** The subtree of the CTE `name`. */
function cteNode(plan: PlanNode, name: string): PlanNode | undefined {
  return planNodes(plan).find((n) => n["Subplan Name"] === `CTE ${name}`);
}

/** Every node under `node` (itself included) that reads akadze.jobs. */
function jobReads(node: PlanNode): PlanNode[] {
  return planNodes(node).filter((n) => n["Relation Name"] === "jobs" && /Scan/.test(n["Node Type"]));
}

const Args = v.object({ n: v.number() });

it("a claim's recovery reads no job when no owner expired, on statistics gathered while another engine ran thousands of jobs", async () => {
  const app = createApp();
  const task = app.task("work", { args: Args }, async () => {});
  await task.using(t.db).enqueueMany(Array.from({ length: 6000 }, (_, n) => ({ n })));
  // Another engine, alive, holds 3,000 of them; the statistics are gathered then (autovacuum does so under load).
  await t.rows("insert into akadze.owners (owner, expires_at) values ('other-engine', now() + interval '1 hour')");
  await t.rows("update akadze.jobs set state = 'running', lease_owner = 'other-engine', attempt = 1, started_at = now() where id <= 3000");
  await t.rows("analyze akadze.jobs");
  const [claim] = await statementsSent(t.pool, isClaim, () => runOnce(app, { db: t.db, batchSize: 100, slots: 4, drain: false }));
  const recovery = cteNode(await planOf(t.pool, claim!, true), "recover_expired");
  expect(recovery).toBeDefined();
  const reads = jobReads(recovery!);
  // The scan is in the plan, for when something expired, and never ran; what ran is the probe for a job's own
  // expiry, an index-only read of jobs_lease_idx that found none.
  expect(reads.filter((n) => (n["Actual Loops"] ?? 0) === 0).length).toBeGreaterThan(0);
  for (const ran of reads.filter((n) => (n["Actual Loops"] ?? 0) > 0)) {
    expect(ran).toMatchObject({ "Node Type": "Index Only Scan", "Index Name": "jobs_lease_idx", "Actual Rows": 0, "Heap Fetches": 0 });
  }
  // Nothing of the other engine's was taken.
  expect(await t.rows("select count(*)::int as n from akadze.jobs where lease_owner = 'other-engine'")).toEqual([{ n: 3000 }]);
});

it("the settle that ends an invocation's jobs marks it stopped without reading the queue table", async () => {
  const app = createApp();
  const task = app.task("work", { args: Args }, async () => {});
  await task.using(t.db).enqueueMany(Array.from({ length: 500 }, (_, n) => ({ n })));
  const settles = await statementsSent(t.pool, isSettle, () => runOnce(app, { db: t.db, id: "inv-ends", batchSize: 500, slots: 50, drain: false }));
  const last = settles.at(-1)!;
  expect(last.text).toContain("akadze_seen as (");
  const registry = cteNode(await planOf(t.pool, last), "akadze_seen");
  expect(registry).toBeDefined();
  expect(jobReads(registry!)).toEqual([]);
  expect(await t.rows("select jobs_done, stopped_at is not null as stopped from akadze.workers where id = 'inv-ends'")).toEqual([{ jobs_done: 500, stopped: true }]);
});
