// Many invocations at once on real Postgres run every job exactly once; and migrate is safe when raced (also over
// neon-http) and leaves an application's own tables alone.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import * as v from "valibot";
import { createApp, migrate, runOnce, type Db } from "../../src/index.js";
import { ADMIN_URL, createTestDatabase, urlFor } from "../support/postgres.js";
import { queryJson } from "../../src/db/query.js";
import { MIGRATIONS } from "../../src/sql/schema/migrations.generated.js";
import { startNeonEndpoint } from "../../src/dev/neon-endpoint.js";
import { configureNeonForEndpoint, neonHttpDb } from "../support/neon.js";

describe("4 concurrent invocation loops over 5,000 jobs on node-postgres", () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let pool: pg.Pool;
  let db: Db;
  beforeAll(async () => {
    database = await createTestDatabase("conc");
    pool = new pg.Pool({ connectionString: database.url, max: 20 });
    db = drizzle(pool) as unknown as Db;
    await db.execute(sql`create table runs (job_id bigint not null, invocation text not null)`);
  });
  afterAll(async () => { await pool.end(); await database.drop(); });

  it("runs every job exactly once and leaves none behind", async () => {
    const app = createApp();
    const work = app.task("work", { args: v.object({ n: v.number() }) }, async (_args, job) => {
      await db.execute(sql`insert into runs (job_id, invocation) values (${job.id}, 'x')`);
    });
    const JOBS = 5000;
    for (let i = 0; i < JOBS; i += 1000) {
      await work.using(db).enqueueMany(Array.from({ length: 1000 }, (_, k) => ({ n: i + k })));
    }
    const loop = async () => {
      let invocations = 0;
      for (;;) {
        const summary = await runOnce(app, { db, batchSize: 100, slots: 10 });
        invocations++;
        if (summary.claimed === 0) return invocations;
      }
    };
    const invocations = await Promise.all([loop(), loop(), loop(), loop()]);
    expect(invocations.every((n) => n > 1)).toBe(true); // all four loops took part
    const [counts] = (await pool.query(`select count(*)::int as runs, count(distinct job_id)::int as jobs,
      (select count(*)::int from (select job_id from runs group by job_id having count(*) > 1) d) as twice,
      (select count(*)::int from akadze.all_jobs where state <> 'succeeded') as unfinished from runs`)).rows;
    expect(counts).toEqual({ runs: JOBS, jobs: JOBS, twice: 0, unfinished: 0 });
  });
});

describe("migrate", () => {
  const fresh = async (name: string) => {
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.query(`create database ${name}`);
    await admin.end();
    return async () => {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    };
  };

  it("is safe when several processes run it at once", async () => {
    const name = `akadze_migrate_race_${process.pid}`;
    const drop = await fresh(name);
    const pools = Array.from({ length: 6 }, () => new pg.Pool({ connectionString: urlFor(name), max: 2 }));
    try {
      const results = await Promise.all(pools.map((p) => migrate(drizzle(p) as unknown as Db)));
      // Racing migrators may each apply some of the migrations, but every migration is applied exactly once.
      const applied = results.flatMap((r) => r.applied).sort();
      expect(applied).toEqual(MIGRATIONS.map((m) => m.name).sort());
      const { rows } = await pools[0].query("select count(*)::int as n from public.akadze_migrations");
      expect(rows[0].n).toBe(MIGRATIONS.length);
      expect((await migrate(drizzle(pools[0]) as unknown as Db)).applied).toEqual([]);
    } finally {
      await Promise.all(pools.map((p) => p.end()));
      await drop();
    }
  });

  it("leaves an application's own tables and drizzle's migrations table alone", async () => {
    const name = `akadze_migrate_app_${process.pid}`;
    const drop = await fresh(name);
    const pool = new pg.Pool({ connectionString: urlFor(name) });
    try {
      await pool.query(`create schema drizzle; create table drizzle.__drizzle_migrations (id serial primary key, hash text);
        insert into drizzle.__drizzle_migrations (hash) values ('app-1'); create table orders (id serial primary key)`);
      await migrate(drizzle(pool) as unknown as Db);
      const { rows } = await pool.query("select (select count(*)::int from drizzle.__drizzle_migrations) as app, to_regclass('orders') is not null as orders, to_regclass('akadze.jobs') is not null as jobs");
      expect(rows[0]).toEqual({ app: 1, orders: true, jobs: true });
    } finally {
      await pool.end();
      await drop();
    }
  });

  it("migrates a fresh database over neon-http, where it cannot hold a transaction open, even when raced", async () => {
    const name = `akadze_migrate_http_${process.pid}`;
    const drop = await fresh(name);
    const endpoint = await startNeonEndpoint({ connectionString: urlFor(name) });
    try {
      configureNeonForEndpoint(endpoint);
      const dbs = [neonHttpDb(endpoint, name), neonHttpDb(endpoint, name), neonHttpDb(endpoint, name)] as unknown as Db[];
      const results = await Promise.all(dbs.map((d) => migrate(d)));
      expect(results.reduce((n, r) => n + r.applied.length, 0)).toBe(MIGRATIONS.length); // each migration applied once
      const rows = await queryJson<number>(dbs[0], sql`select count(*)::int as r from akadze.all_jobs`);
      expect(rows).toBe(0);
    } finally {
      await endpoint.close();
      await drop();
    }
  });
});
