// README step 1's other path with the real drizzle-kit: a project re-exporting akadze/schema generates and applies
// its migration; akadze runs no job until `akadze migrate` completes the schema, then completeBatch works; push with
// the README's filters keeps akadze's record table; a schema that lacks a table is refused at start, naming it.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, current, migrate, runOnce, runWorker, type Db } from "../../src/index.js";
import { COMPLETE_HINT } from "../../src/db/schema-check.js";
import { MIGRATE_HINT } from "../../src/db/query.js";
import { createTestDatabase } from "../support/postgres.js";
import { runAkadze } from "../support/cli.js";

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../..", import.meta.url));

/** A project whose drizzle schema is its own table plus `export * from "akadze/schema"`, as README step 1 shows. */
function drizzleKitProject(url: string): string {
  const dir = mkdtempSync(join(tmpdir(), "akadze-drizzle-kit-"));
  symlinkSync(join(repo, "node_modules"), join(dir, "node_modules"), "dir");
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "src/schema.ts"), [
    'import { pgTable, serial, text } from "drizzle-orm/pg-core";',
    `export * from ${JSON.stringify(join(repo, "src/schema.ts"))}; // "akadze/schema" in an installed project`,
    'export const orders = pgTable("orders", { id: serial("id").primaryKey(), customer: text("customer").notNull() });',
    "",
  ].join("\n"));
  // The filters README step 1 gives: push manages akadze's schema too, and leaves akadze migrate's record alone.
  writeFileSync(join(dir, "drizzle.config.ts"), `import { defineConfig } from "drizzle-kit";
export default defineConfig({ dialect: "postgresql", schema: "./src/schema.ts", out: "./drizzle",
  schemaFilter: ["public", "akadze"], tablesFilter: ["!akadze_migrations", "!job_history_*"], dbCredentials: { url: ${JSON.stringify(url)} } });
`);
  return dir;
}

const drizzleKit = (dir: string, args: string[]) =>
  run(process.execPath, [join(repo, "node_modules/drizzle-kit/bin.cjs"), ...args], { cwd: dir, maxBuffer: 16 << 20 });

/** An empty database (the template's akadze schema and records dropped), its pool and drizzle db. */
async function emptyDatabase(prefix: string) {
  const database = await createTestDatabase(prefix);
  const pool = new pg.Pool({ connectionString: database.url, max: 4 });
  await pool.query("drop schema akadze cascade; drop table if exists public.akadze_migrations");
  const tables = async () => (await pool.query(
    "select table_schema || '.' || table_name as name from information_schema.tables where table_schema in ('public', 'akadze') order by 1")).rows.map((r) => r.name);
  return { ...database, pool, db: drizzle(pool) as unknown as Db, tables };
}

describe("the drizzle-kit path (export * from \"akadze/schema\")", () => {
  let d: Awaited<ReturnType<typeof emptyDatabase>>;
  let project: string;
  beforeAll(async () => {
    d = await emptyDatabase("drizzle_kit");
    project = drizzleKitProject(d.url);
  });
  afterAll(async () => {
    await d?.pool.end();
    await d?.drop();
    if (project) rmSync(project, { recursive: true, force: true });
  });

  it("drizzle-kit makes the tables; akadze refuses to run jobs until akadze migrate adds its function; then completeBatch works", async () => {
    await drizzleKit(project, ["generate"]);
    await drizzleKit(project, ["migrate"]);
    expect(await d.tables()).toEqual(expect.arrayContaining(["akadze.jobs", "akadze.workers", "public.orders"]));

    let sideEffects = 0;
    const app = createApp();
    const place = app.task("order.place", { maxAttempts: 3 }, async () => {
      sideEffects++;
      await current().completeBatch((db) => [db.execute(sql`insert into orders (customer) values ('ada')`)]);
      return { placed: true };
    });
    const id = await place.using(d.db).enqueue({});

    // Refused before any job runs, with the fix in the sentence: nothing ran, no attempt was spent.
    // What drizzle-kit cannot make: the functions, and the all_jobs view (declared `.existing()` in the schema).
    const refusal = new RegExp(`^akadze's schema in this database lacks akadze\\.all_jobs, .*akadze\\.raise_error\\(text, text\\): ${COMPLETE_HINT.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`);
    await expect(runOnce(app, { db: d.db })).rejects.toThrow(refusal);
    await expect(runWorker(app, { db: d.db, listen: false })).rejects.toThrow(refusal);
    expect(sideEffects).toBe(0);
    expect((await d.pool.query("select state, attempt from akadze.jobs where id = $1", [id])).rows).toEqual([{ state: "queued", attempt: 0 }]);

    const completed = await runAkadze(["migrate"], { DATABASE_URL: d.url });
    expect(completed).toMatchObject({ code: 0, stderr: "" });
    expect(completed.stdout).toMatch(/^completed the schema drizzle-kit made at .*: added akadze\.all_jobs, .*akadze\.raise_error\(text, text\) \(the tables stay drizzle-kit's\)\n$/);
    expect(await d.tables()).not.toContain("public.akadze_migrations"); // nothing for drizzle-kit push to drop
    expect((await runAkadze(["migrate"], { DATABASE_URL: d.url })).stdout).toMatch(/ is up to date\n$/);
    expect(await migrate(d.db)).toEqual({ applied: [], completed: [] });

    expect(await runOnce(app, { db: d.db })).toMatchObject({ claimed: 1, succeeded: 1, failed: 0, retried: 0 });
    expect(sideEffects).toBe(1);
    expect((await d.pool.query("select count(*)::int as n from orders")).rows).toEqual([{ n: 1 }]);
    expect((await d.pool.query("select state, result from akadze.all_jobs where id = $1", [id])).rows).toEqual([{ state: "succeeded", result: { placed: true } }]);

    // drizzle-kit push after all this finds nothing to change in akadze's schema.
    const pushed = await drizzleKit(project, ["push", "--force"]);
    expect(pushed.stdout + pushed.stderr).toMatch(/No changes detected|Changes applied/);
    expect(await d.tables()).toEqual(expect.arrayContaining(["akadze.jobs", "akadze.limit_tokens", "public.orders"]));
  }, 120_000);
});

describe("drizzle-kit push next to akadze migrate", () => {
  it("with the README's tablesFilter, push keeps akadze migrate's record table", async () => {
    const d = await emptyDatabase("drizzle_kit_push");
    const project = drizzleKitProject(d.url);
    try {
      expect((await migrate(d.db)).applied.length).toBeGreaterThan(0);
      await drizzleKit(project, ["push", "--force"]);
      expect(await d.tables()).toEqual(expect.arrayContaining(["public.akadze_migrations", "public.orders", "akadze.jobs"]));
      expect(await migrate(d.db)).toEqual({ applied: [], completed: [] });
    } finally {
      await d.pool.end();
      await d.drop();
      rmSync(project, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("a schema akadze cannot work with is refused at start", () => {
  it("a missing table is named, with the fix, before any job runs; a database never migrated gets the migrate sentence", async () => {
    const database = await createTestDatabase("schema_check");
    const pool = new pg.Pool({ connectionString: database.url, max: 2 });
    try {
      const db = drizzle(pool) as unknown as Db;
      const app = createApp();
      let ran = 0;
      const t = app.task("t", async () => { ran++; });
      await t.using(db).enqueue({});
      // A column without an index of its own is looked for by name (the one a statement would miss at its first settle).
      await pool.query("alter table akadze.jobs rename column trace_context to trace_context_was");
      await expect(runOnce(app, { db })).rejects.toThrow(/^akadze's schema in this database lacks akadze\.jobs\.trace_context: run `npx akadze migrate`, or, when drizzle-kit/);
      await pool.query("alter table akadze.jobs rename column trace_context_was to trace_context");
      await pool.query("drop table akadze.limit_tokens");
      await expect(runOnce(app, { db })).rejects.toThrow(/^akadze's schema in this database lacks akadze\.limit_tokens: run `npx akadze migrate`/);
      expect(ran).toBe(0);
      await pool.query("drop schema akadze cascade");
      await expect(runOnce(app, { db: drizzle(pool) as unknown as Db })).rejects.toThrow(MIGRATE_HINT);
    } finally {
      await pool.end();
      await database.drop();
    }
  });
});
