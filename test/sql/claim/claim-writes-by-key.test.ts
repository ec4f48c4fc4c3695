// A claim leases its batch by looking each job up once, whatever the planner's statistics say (issue 38). Planned
// on statistics gathered while every job was running (the claim's own ANALYZE runs after a full claim: after a
// burst of 1,000 that two claims of 500 took, it saw no queued job), the lease of a batch of 500 was a nested loop
// that read the whole batch through the primary key for each of its jobs: 125,000 rows read, claims six times
// slower than on fresh statistics, until the next ANALYZE (10 s later at the soonest).
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import * as v from "valibot";
import { createApp, runOnce } from "../../../src/index.js";
import { openTestDatabase, type TestDatabase } from "../../support/database.js";
import { isClaim, statementsSent } from "../../support/statements.js";
import { planNodes, planOf, type PlanNode } from "../../support/plan-nodes.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("claim_writes_by_key"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

const Args = v.object({ n: v.number() });

/** Rows read from akadze.jobs under `node`: every scan's rows over all its loops. */
function jobRowsRead(node: PlanNode): number {
  return planNodes(node).filter((n) => n["Relation Name"] === "jobs" && /Scan/.test(n["Node Type"]))
    .reduce((sum, n) => sum + (n["Actual Rows"] ?? 0) * (n["Actual Loops"] ?? 0), 0);
}

it("a claim of 500 on statistics gathered while every job was running reads each job it leases once", async () => {
  const app = createApp();
  const task = app.task("work", { args: Args }, async () => {});
  // The claims an invocation sends: its first (with the riders) and a later one.
  await task.using(t.db).enqueueMany(Array.from({ length: 1000 }, (_, n) => ({ n })));
  const claims = (await statementsSent(t.pool, isClaim, () => runOnce(app, { db: t.db, batchSize: 500, slots: 500, budget: Infinity }))).slice(0, 2);
  expect(claims).toHaveLength(2);
  await task.using(t.db).enqueueMany(Array.from({ length: 1000 }, (_, n) => ({ n })));
  await t.rows("update akadze.jobs set state = 'running', lease_owner = 'gone', attempt = 1");
  await t.rows("analyze akadze.jobs");
  await t.rows("delete from akadze.jobs");
  await task.using(t.db).enqueueMany(Array.from({ length: 20000 }, (_, n) => ({ n })));
  for (const claim of claims) {
    const plan = await planOf(t.pool, claim, true);
    const lease = planNodes(plan).find((n) => n["Subplan Name"] === "CTE claimed");
    expect(lease, "the claim's lease").toBeDefined();
    expect(lease!["Actual Rows"]).toBe(500);
    expect(jobRowsRead(lease!)).toBeLessThanOrEqual(500);
  }
});
