// The queue table holds live jobs only: a finished job moves to the history (partitioned by finish time, dropped whole
// by retention) or to the dead letters; the migration from the schema before moves existing rows once; a role that may
// not create or drop tables falls back to row deletes.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import pg from "pg";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, current, Fail, getJob, listJobs, migrate, requeue, runOnce } from "../../../src/index.js";
import { runAtomically, type Db } from "../../../src/db/query.js";
import { applyMigrationStatements } from "../../../src/sql/schema/apply-migration.js";
import { MIGRATIONS } from "../../../src/sql/schema/migrations.generated.js";
import { ManualClock } from "../../support/clock.js";
import { forEachDriver } from "../../support/drivers.js";
import { createTestDatabase } from "../../support/postgres.js";

const DAY = 86_400_000;
const BEFORE = MIGRATIONS.findIndex((m) => m.name === "0007_job_history");

/** Puts `db` back on the schema before the history (migrations up to 0006), with finished jobs of every state in it. */
async function legacyDatabase(db: Db): Promise<void> {
  await db.execute(sql`drop schema if exists akadze cascade`);
  await db.execute(sql`drop table if exists public.akadze_migrations`);
  for (const m of MIGRATIONS.slice(0, BEFORE)) await runAtomically(db, (d) => applyMigrationStatements(m).map((s) => d.execute(s)));
  await db.execute(sql.raw(`insert into akadze.jobs (task, state, attempt, result, errors, created_at, started_at, finished_at, lease_owner, lease_expires_at) values
    ('t', 'succeeded', 1, '{"kept": 1}', '[]', now() - interval '3 days', now() - interval '3 days', now() - interval '3 days', null, null),
    ('t', 'failed', 3, null, '[{"kind": "Error", "message": "no"}]', now() - interval '1 day', now() - interval '1 day', now() - interval '1 day', null, null),
    ('t', 'cancelled', 0, null, '[]', now() - interval '10 days', null, now() - interval '10 days', null, null),
    ('t', 'rate_limited', 0, null, '[]', now() - interval '2 hours', null, now() - interval '2 hours', null, null),
    ('t', 'queued', 0, null, '[]', now(), null, null, null, null),
    ('t', 'running', 1, null, '[]', now(), now(), null, 'inv-x', now() + interval '1 minute')
    returning id`));
}

describe("the migration from the schema before", () => {
  forEachDriver((h) => {
    it("moves finished jobs to the history and failed ones to the dead letters, keeping every field", async () => {
      await legacyDatabase(h().db);
      expect((await migrate(h().db)).applied).toEqual(MIGRATIONS.slice(BEFORE).map((m) => m.name));
      expect(await h().rows("select id::int, state from akadze.jobs order by id")).toEqual([{ id: 5, state: "queued" }, { id: 6, state: "running" }]);
      expect(await h().rows("select id::int, state, result from akadze.job_history order by id")).toEqual([
        { id: 1, state: "succeeded", result: { kept: 1 } }, { id: 3, state: "cancelled", result: null }, { id: 4, state: "rate_limited", result: null }]);
      expect(await h().rows("select id::int, state, attempt from akadze.failed_jobs")).toEqual([{ id: 2, state: "failed", attempt: 3 }]);
      // The old rows sit in day partitions that end at the migration; none in the default partition.
      expect(await h().rows("select count(*)::int as n from akadze.job_history_default")).toEqual([{ n: 0 }]);
      expect(Number((await h().rows<{ n: number }>("select count(*)::int as n from pg_inherits where inhparent = 'akadze.job_history'::regclass"))[0].n)).toBeGreaterThanOrEqual(3);
      // Every reader sees both.
      expect((await getJob(h().db, 1))).toMatchObject({ state: "succeeded", result: { kept: 1 } });
      expect((await getJob(h().db, 2))).toMatchObject({ state: "failed", errors: [{ message: "no" }] });
      expect((await listJobs(h().db)).map((j) => [j.id, j.state])).toEqual([
        [6, "running"], [5, "queued"], [4, "rate_limited"], [3, "cancelled"], [2, "failed"], [1, "succeeded"]]);
      // Migrating again changes nothing.
      expect((await migrate(h().db)).applied).toEqual([]);
    });
  });

  it("is safe when several processes run it at once: the rows move exactly once", async () => {
    const database = await createTestDatabase("history_race");
    const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: database.url, max: 2 }));
    try {
      const first = drizzle(pools[0]) as unknown as Db;
      await legacyDatabase(first);
      const results = await Promise.all(pools.map((p) => migrate(drizzle(p) as unknown as Db)));
      // Each migration is applied by exactly one of the processes (which one is the race's).
      expect(results.flatMap((r) => r.applied).sort()).toEqual(MIGRATIONS.slice(BEFORE).map((m) => m.name));
      expect((await pools[0].query("select count(*)::int as n from akadze.all_jobs")).rows).toEqual([{ n: 6 }]);
      expect((await pools[0].query("select count(*)::int as n from akadze.job_history")).rows).toEqual([{ n: 3 }]);
    } finally {
      for (const p of pools) await p.end();
      await database.drop();
    }
  });
});

describe("jobs move out of the queue table as they finish", () => {
  forEachDriver((h) => {
    it("succeeded, cancelled and failed jobs leave akadze.jobs; requeue moves a failed one back under its id", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      const ok = app.task("ok", async () => ({ done: true }));
      const fails = app.task("fails", async () => { throw new Fail("no"); });
      const viaTx = app.task("tx", async () => { await current().completeBatch(() => []); return { kept: "after" }; });
      const [a, b, c] = [await ok.using(h().db).enqueue({}), await fails.using(h().db).enqueue({}), await viaTx.using(h().db).enqueue({})];
      const later = await ok.using(h().db, { delay: "1h" }).enqueue({});
      await runOnce(app, { db: h().db, now: clock.now });
      expect(await h().rows("select id::int, state from akadze.jobs")).toEqual([{ id: later, state: "queued" }]);
      expect(await h().rows("select id::int, state, result from akadze.job_history order by id")).toEqual([
        { id: a, state: "succeeded", result: { done: true } }, { id: c, state: "succeeded", result: { kept: "after" } }]);
      expect(await h().rows("select id::int from akadze.failed_jobs")).toEqual([{ id: b }]);
      expect(await getJob(h().db, b)).toMatchObject({ state: "failed", attempt: 1 });

      expect(await requeue(h().db, b)).toBe(true);
      expect(await h().rows("select id::int, state from akadze.jobs order by id")).toEqual([{ id: b, state: "queued" }, { id: later, state: "queued" }]);
      expect(await h().rows("select count(*)::int as n from akadze.failed_jobs")).toEqual([{ n: 0 }]);
      await runOnce(app, { db: h().db, now: clock.now });
      expect(await getJob(h().db, b)).toMatchObject({ state: "failed", attempt: 2, maxAttempts: 3 });
    });

    it("retention drops the history's partitions whole and keeps the dead letters", async () => {
      const clock = new ManualClock("2026-07-01T12:00:00Z"); // a day no other test here finished jobs on
      const app = createApp({ clock: clock.now });
      const ok = app.task("ok", async () => {});
      const fails = app.task("fails", async () => { throw new Fail("no"); });
      // Partitions are made lazily: once the default partition holds a row older than one width (a day
      // here, at most a minute). The jobs of the third invocation finish into them.
      await ok.using(h().db).enqueue({});
      await runOnce(app, { db: h().db, now: clock.now });
      clock.advance(61_000);
      await runOnce(app, { db: h().db, now: clock.now });
      await ok.using(h().db).enqueueMany(Array.from({ length: 30 }, () => ({})));
      await fails.using(h().db).enqueue({});
      await runOnce(app, { db: h().db, now: clock.now });
      expect(await h().rows("select count(*)::int as n from akadze.job_history_default")).toEqual([{ n: 1 }]);
      const partitions = async () => (await h().rows<{ name: string }>(
        "select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'akadze.job_history'::regclass and c.relname <> 'job_history_default'")).map((r) => r.name);
      const holding = await h().rows<{ name: string }>("select distinct tableoid::regclass::text as name from akadze.job_history where tableoid <> 'akadze.job_history_default'::regclass");
      expect(holding).toHaveLength(1);
      clock.advance(9 * DAY);
      await runOnce(app, { db: h().db, now: clock.now });
      // Dropped, not deleted row by row: the partition that held the 30 jobs is gone.
      expect(await partitions()).not.toContain(holding[0].name.replace("akadze.", ""));
      expect(await h().rows("select count(*)::int as n from akadze.job_history")).toEqual([{ n: 0 }]);
      expect(await h().rows("select count(*)::int as n from akadze.failed_jobs")).toEqual([{ n: 1 }]);
    });

    it("keepSucceeded: false keeps no row of a succeeded job, and keeps failed and cancelled ones", async () => {
      const clock = new ManualClock();
      const app = createApp({ clock: clock.now });
      const ok = app.task("ok", async () => ({ unseen: true }));
      const viaTx = app.task("tx", async () => { await current().completeBatch(() => []); return 1; });
      const fails = app.task("fails", async () => { throw new Fail("no"); });
      const ids = [await ok.using(h().db).enqueue({}), await viaTx.using(h().db).enqueue({}), await fails.using(h().db).enqueue({})];
      const summary = await runOnce(app, { db: h().db, now: clock.now, retention: { keepSucceeded: false } });
      expect(summary).toMatchObject({ succeeded: 2, failed: 1 });
      expect(await getJob(h().db, ids[0])).toBeNull();
      expect(await getJob(h().db, ids[1])).toBeNull();
      expect(await getJob(h().db, ids[2])).toMatchObject({ state: "failed" });
      expect(await h().rows("select count(*)::int as n from akadze.all_jobs")).toEqual([{ n: 1 }]);
    });

    it("a settle of successes alone (its short form) keeps every field of the job and its result in the history, and none with keepSucceeded: false", async () => {
      const clock = new ManualClock("2026-08-01T12:00:00Z");
      const app = createApp({ clock: clock.now });
      let runs = 0;
      // Its first run fails (a settle of other outcomes), its second succeeds with nothing to return (the short form).
      const flaky = app.task("flaky", { maxAttempts: 3 }, async () => { if (++runs === 1) throw new Error("first run"); });
      const valued = app.task("valued", async () => ({ doubled: 42 }));
      const id = await flaky.using(h().db, { priority: 3 }).enqueue({ n: 1 });
      expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ retried: 1 });
      clock.advance(5_000);
      const started = clock.now();
      expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 1 });
      expect(await h().rows("select count(*)::int as n from akadze.jobs")).toEqual([{ n: 0 }]);
      const job = await getJob(h().db, id);
      expect(job).toMatchObject({ state: "succeeded", args: { n: 1 }, attempt: 2, maxAttempts: 3, priority: 3, result: null });
      expect(job!.errors).toHaveLength(1);
      expect(job!.errors[0]).toMatchObject({ attempt: 1, message: "first run" });
      expect([job!.startedAt, job!.finishedAt]).toEqual([started.toISOString(), started.toISOString()]);
      // A success with a result goes in the short form too, beside one without.
      const withResult = await valued.using(h().db).enqueue({ n: 21 });
      const plainToo = await flaky.using(h().db).enqueue({ n: 3 });
      expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 2 });
      expect(await getJob(h().db, withResult)).toMatchObject({ state: "succeeded", attempt: 1, result: { doubled: 42 } });
      expect(await getJob(h().db, plainToo)).toMatchObject({ state: "succeeded", attempt: 1, result: null });

      const other = await flaky.using(h().db).enqueue({ n: 2 });
      expect(await runOnce(app, { db: h().db, now: clock.now, retention: { keepSucceeded: false } })).toMatchObject({ succeeded: 1 });
      expect(await getJob(h().db, other)).toBeNull();
      expect(await h().rows("select count(*)::int as n from akadze.all_jobs")).toEqual([{ n: 3 }]);
    });
  });
});

describe("a role that may not create or drop tables", () => {
  const role = `akadze_h22_dml_${process.pid}`;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let owner: pg.Pool;
  beforeAll(async () => {
    database = await createTestDatabase("history_role");
    owner = new pg.Pool({ connectionString: database.url, max: 2 });
    await owner.query(`drop role if exists ${role}`).catch(() => {});
    await owner.query(`create role ${role} login`);
    await owner.query(`grant usage on schema akadze to ${role}; grant select, insert, update, delete on all tables in schema akadze to ${role};
      grant usage on all sequences in schema akadze to ${role}; grant all on table public.akadze_migrations to ${role}`);
  });
  afterAll(async () => {
    await owner?.end();
    await database?.drop();
    const admin = new pg.Client({ connectionString: database.url.replace(/\/[^/]+$/, "/test") });
    await admin.connect();
    await admin.query(`drop role if exists ${role}`).catch(() => {});
    await admin.end();
  });

  it("falls back to row deletes and says so once", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ok = app.task("ok", async () => {});
    // The owner made the partitions (lazily: once a row of the default partition is a minute old); the
    // worker's role cannot drop them, and the rows in them still go.
    const ownerDb = drizzle(owner) as unknown as Db;
    await ok.using(ownerDb).enqueue({});
    await runOnce(app, { db: ownerDb, now: clock.now });
    clock.advance(61_000);
    await runOnce(app, { db: ownerDb, now: clock.now });
    expect(Number((await owner.query("select count(*)::int as n from pg_inherits where inhparent = 'akadze.job_history'::regclass")).rows[0].n)).toBeGreaterThan(1);
    const limited = new pg.Pool({ connectionString: database.url.replace("postgres@", `${role}@`), max: 2 });
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    try {
      const db = drizzle(limited) as unknown as Db;
      await ok.using(db).enqueueMany(Array.from({ length: 12 }, () => ({})));
      await runOnce(app, { db, now: clock.now });
      expect((await owner.query("select count(*)::int as n from akadze.job_history")).rows).toEqual([{ n: 13 }]);
      clock.advance(9 * DAY);
      await runOnce(app, { db, now: clock.now, retention: { batch: 5 } });
      await runOnce(app, { db, now: clock.now, retention: { batch: 5 } });
      await runOnce(app, { db, now: clock.now, retention: { batch: 5 } });
      expect((await owner.query("select count(*)::int as n from akadze.job_history")).rows).toEqual([{ n: 0 }]);
      const said = warn.mock.calls.map((c) => String(c[0])).filter((line) => line.includes("row by row"));
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/must be owner/);
    } finally {
      warn.mockRestore();
      await limited.end();
    }
  });
});
