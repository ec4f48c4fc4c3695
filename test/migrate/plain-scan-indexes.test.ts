// Migration 0025 (the plain scan's indexes without keyed jobs that have a turn) applied over neon-http to a
// database of migration 0024's schema while a worker runs its queue: every job, keyed or not, runs exactly once,
// and the two indexes are the new ones under their old names.
import { afterAll, beforeAll, expect, it } from "vitest";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import * as v from "valibot";
import { createApp, migrate, runWorker, type Db } from "../../src/index.js";
import { runAtomically } from "../../src/db/query.js";
import { applyMigrationStatements } from "../../src/sql/schema/apply-migration.js";
import { MIGRATIONS } from "../../src/sql/schema/migrations.generated.js";
import { startNeonEndpoint, type NeonEndpoint } from "../../src/dev/neon-endpoint.js";
import { neonHttpDb } from "../support/neon.js";
import { ADMIN_URL, urlFor } from "../support/postgres.js";
import { waitFor } from "../support/wait-for.js";

const name = `akadze_migrate_0025_${process.pid}`;
let pool: pg.Pool;
let endpoint: NeonEndpoint;
async function admin(statement: string): Promise<void> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try { await c.query(statement); } finally { await c.end(); }
}
beforeAll(async () => {
  await admin(`drop database if exists ${name} with (force)`);
  await admin(`create database ${name}`);
  pool = new pg.Pool({ connectionString: urlFor(name), max: 6 });
  endpoint = await startNeonEndpoint({ connectionString: urlFor(name) });
});
afterAll(async () => {
  await endpoint?.close();
  await pool?.end();
  await admin(`drop database if exists ${name} with (force)`);
});

it("0025 applied over neon-http under a running worker loses no job and runs none twice; the plain scan's indexes leave out jobs with a turn", async () => {
  const db = drizzle(pool) as unknown as Db;
  for (const migration of MIGRATIONS.filter((m) => m.id <= 24)) {
    await runAtomically(db, (d) => applyMigrationStatements(migration).map((statement) => d.execute(statement)));
  }
  const app = createApp();
  const runs = new Map<string, number>();
  // Four jobs stay running until the migration has committed: their settles come after it, beside the claims.
  let migrated!: () => void;
  const gate = new Promise<void>((resolve) => { migrated = resolve; });
  const work = app.task("migrate.work", { args: v.object({ n: v.number(), key: v.string() }) }, async ({ n, key }) => {
    runs.set(`${key}:${n}`, (runs.get(`${key}:${n}`) ?? 0) + 1);
    if (key === "none" && n < 4) await gate;
  });
  await work.using(db).enqueueMany(Array.from({ length: 1000 }, (_, n) => ({ n, key: "none" })));
  for (const key of ["a", "b"]) await work.using(db, { fairKey: key }).enqueueMany(Array.from({ length: 1000 }, (_, n) => ({ n, key })));
  const stop = new AbortController();
  const worker = runWorker(app, { db, slots: 16, signal: stop.signal });
  try {
    await waitFor(() => runs.has("none:3"), "the gated jobs running", { timeoutMs: 20_000 });
    const result = await migrate(neonHttpDb(endpoint, name) as unknown as Db);
    migrated();
    expect(result.applied).toEqual(MIGRATIONS.filter((m) => m.id > 24).map((m) => m.name));
    // More jobs of both kinds after the migration, each through its own index.
    await work.using(db, { fairKey: "c" }).enqueueMany(Array.from({ length: 100 }, (_, n) => ({ n, key: "c" })));
    await work.using(db).enqueueMany(Array.from({ length: 100 }, (_, n) => ({ n, key: "late" })));
    await waitFor(() => runs.size === 3200, "every job run", { timeoutMs: 40_000 });
  } finally {
    migrated();
    stop.abort();
    await worker;
  }
  expect([...runs.values()].every((count) => count === 1)).toBe(true);
  expect((await pool.query("select count(*)::int as n from akadze.jobs")).rows).toEqual([{ n: 0 }]);
  const { rows } = await pool.query(`select indexname, indexdef from pg_indexes where schemaname = 'akadze' and tablename = 'jobs'
    and indexname in ('jobs_due_idx', 'jobs_claim_idx') order by indexname`);
  expect(rows.map((r) => r.indexname)).toEqual(["jobs_claim_idx", "jobs_due_idx"]);
  for (const r of rows) expect(r.indexdef).toMatch(/fair_tag IS NULL/);
}, 90_000);
