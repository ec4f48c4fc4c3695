// Migration 0022 (issue 38): a queue table without planner statistics gets them. On a fresh install the first
// claims over a backlog read their batch off the claim index instead of reading and sorting the whole queue; the
// table is left empty and its ids unchanged; a table with jobs and no statistics is analyzed; one with statistics
// is left alone. On Postgres and on PGlite.
import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { sql } from "drizzle-orm";
import * as v from "valibot";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { createApp, migrate, runOnce, type Db } from "../../src/index.js";
import { MIGRATIONS } from "../../src/sql/schema/migrations.generated.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { isClaim, statementsSent } from "../support/statements.js";
import { planNodes, planOf } from "../support/plan-nodes.js";

const SEED = MIGRATIONS.find((m) => m.name === "0022_seed_statistics")!.statements;

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("seeded_statistics"); });
afterAll(async () => { await t?.close(); });
afterEach(async () => { await t.reset(); });

const Args = v.object({ n: v.number() });

/** The most common values the planner's statistics name for a column of akadze.jobs (null: none gathered). */
async function commonValues(column: "state" | "task"): Promise<string | null> {
  const rows = await t.rows<{ vals: string | null }>(
    "select most_common_vals::text as vals from pg_stats where schemaname = 'akadze' and tablename = 'jobs' and attname = $1", [column]);
  return rows[0]?.vals ?? null;
}

// (The database is cloned from the suite's migrated template: a fresh install, nothing analyzed since.)
it("the fresh table is left empty, with statistics of queued jobs, and the first job's id is 1", async () => {
  expect(await t.rows("select id from akadze.jobs")).toEqual([]);
  expect(await commonValues("state")).toBe("{queued}");
  const app = createApp();
  const task = app.task("work", { args: Args }, async () => {});
  expect(await task.using(t.db).enqueue({ n: 1 })).toBe(1);
});

it("a fresh install's claim over a backlog of 5,000 reads its batch of 100 off the claim index, not the whole queue", async () => {
  const app = createApp();
  const task = app.task("work", { args: Args }, async () => {});
  await task.using(t.db).enqueueMany(Array.from({ length: 5000 }, (_, n) => ({ n })));
  const [claim] = await statementsSent(t.pool, isClaim, () => runOnce(app, { db: t.db, batchSize: 100, slots: 4, drain: false }));
  // Run again in a transaction rolled back: it claims the next 100.
  const plan = await planOf(t.pool, claim!, true);
  const jobScans = planNodes(plan).filter((n) => n["Relation Name"] === "jobs");
  expect(jobScans.some((n) => n["Node Type"] === "Index Scan" && n["Index Name"] === "jobs_due_idx")).toBe(true);
  for (const scan of jobScans) expect((scan["Actual Rows"] ?? 0) * (scan["Actual Loops"] ?? 1)).toBeLessThan(1000);
  expect(planNodes(plan).filter((n) => n["Node Type"] === "Sort").every((n) => (n["Actual Rows"] ?? 0) <= 100)).toBe(true);
});

it("a table with jobs and no statistics is analyzed; a table with statistics is left as it is", async () => {
  await t.rows("delete from pg_statistic where starelid = 'akadze.jobs'::regclass");
  expect(await commonValues("task")).toBeNull();
  const app = createApp();
  const first = app.task("first", { args: Args }, async () => {});
  const second = app.task("second", { args: Args }, async () => {});
  await first.using(t.db).enqueueMany(Array.from({ length: 50 }, (_, n) => ({ n })));
  for (const statement of SEED) await t.db.execute(sql.raw(statement));
  expect(await commonValues("task")).toBe("{first}");
  expect((await t.rows("select id from akadze.jobs")).length).toBe(50);
  await second.using(t.db).enqueueMany(Array.from({ length: 500 }, (_, n) => ({ n })));
  for (const statement of SEED) await t.db.execute(sql.raw(statement));
  expect(await commonValues("task")).toBe("{first}");
});

it("on PGlite, a fresh install's migration leaves the table empty and gives it statistics", async () => {
  const client = new PGlite();
  try {
    const db = drizzle(client) as unknown as Db;
    await migrate(db);
    const rows = (await client.query<{ jobs: number; stats: number }>(
      "select (select count(*) from akadze.jobs)::int as jobs, (select count(*) from pg_stats where schemaname = 'akadze' and tablename = 'jobs')::int as stats")).rows;
    expect(rows[0]!.jobs).toBe(0);
    expect(rows[0]!.stats).toBeGreaterThan(0);
  } finally {
    await client.close();
  }
});
