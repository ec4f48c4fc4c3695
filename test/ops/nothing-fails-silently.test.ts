// Nothing fails silently (issue 12): failed jobs get a log line with their error, unknown tasks and limitKeys without a
// limit are said, tasks whose timeout cannot fit the budget are warned about, an unmigrated database or a bad connect
// gets a sentence naming the fix, and an invocation's info line reads right.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { Hono } from "hono";
import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import pg from "pg";
import { sql } from "drizzle-orm";
import { AkadzeError, Snooze, connect, createApp, disconnectAll, InvalidInput, runOnce, setLimit, type Db, type Duration } from "../../src/index.js";
import { akadzeRoutes, nudge, scheduledInvocation } from "../../src/edge/hono.js";
import { isNeonHttp, MIGRATE_HINT, queryJson } from "../../src/db/query.js";
import { invocationLogLines } from "../../src/ops/invocation-log.js";
import { emptySummary } from "../../src/runtime/summary.js";
import { findMisfits, misfitWarnings } from "../../src/ops/misfits.js";
import { startNeonEndpoint, type NeonEndpoint } from "../../src/dev/neon-endpoint.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { createTestDatabase } from "../support/postgres.js";
import { captureConsole } from "../support/console.js";

const ctxFor = (waits: Promise<unknown>[]) => ({ waitUntil: (p: Promise<unknown>) => { waits.push(p); }, passThroughOnException() {}, props: {} });

/** What console.warn and console.log printed while `fn` ran (the handlers' log is the console). */
async function consoleLines(fn: () => Promise<unknown> | unknown): Promise<{ warn: string[]; log: string[] }> {
  const { calls } = await captureConsole(["warn", "log"], fn);
  return { warn: calls.warn.map((c) => c.join(" ")), log: calls.log.map((c) => c.join(" ")) };
}

afterEach(() => { vi.restoreAllMocks(); });

forEachDriver((h) => {
  it("a retried and then failed job each give one log line with the error", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const mail = app.task("mail.send", { maxAttempts: 2, queue: "mail" }, async () => { throw new Error("SMTP refused (421)\nat the relay"); });
    const id = await mail.using(h().db).enqueue({});
    const first = await runOnce(app, { db: h().db, now: clock.now });
    expect(first.problems).toEqual([{ jobId: id, task: "mail.send", queue: "mail", attempt: 1, to: "queued", error: { kind: "Error", message: "SMTP refused (421)\nat the relay" } }]);
    expect(invocationLogLines(first).filter((l) => l.level === "warn").map((l) => l.text))
      .toEqual([`job ${id} (mail.send, queue mail, attempt 1) will retry: Error: SMTP refused (421)`]);
    clock.advance(10 * 60_000);
    const second = await runOnce(app, { db: h().db, now: clock.now });
    expect(invocationLogLines(second).filter((l) => l.level === "warn").map((l) => l.text))
      .toEqual([`job ${id} (mail.send, queue mail, attempt 2) failed: Error: SMTP refused (421)`]);
  });

  it("a snoozed job is no problem, a failing one is a line in the work route's log", async () => {
    const app = createApp();
    await app.task("wait", async () => { throw new Snooze("1m"); }).using(h().db).enqueue({});
    const id = await app.task("broken", { maxAttempts: 1 }, async () => { throw new Error("vendor said no"); }).using(h().db).enqueue({});
    const routes = akadzeRoutes(app, { db: h().db, secret: "s" });
    const { warn } = await consoleLines(async () => {
      const res = await routes.request("/work", { method: "POST", headers: { authorization: "Bearer s" } });
      expect(await res.json()).toMatchObject({ snoozed: 1, failed: 1, problems: [{ jobId: id, to: "failed" }] });
    });
    expect(warn).toEqual([`akadze: job ${id} (broken, queue default, attempt 1) failed: Error: vendor said no`]);
  });

  it("a succeeded job is no problem", async () => {
    const app = createApp();
    await app.task("fine", async () => ({ ok: true })).using(h().db).enqueue({});
    const summary = await runOnce(app, { db: h().db });
    expect(summary).toMatchObject({ succeeded: 1, problems: [] });
    expect(invocationLogLines(summary).map((l) => l.level)).toEqual(["info"]);
  });

  it("queued jobs of a task the app does not define, and a limitKey with no limit, are found and said", async () => {
    const producer = createApp();
    await producer.task("mail.sned", { queue: "mail" }, async () => {}).using(h().db).enqueueMany([{}, {}]);
    const consumer = createApp();
    const send = consumer.task("mail.send", { queue: "mail" }, async () => {});
    await send.using(h().db, { limitKey: "smtp" }).enqueue({});
    const misfits = await findMisfits(h().db, [...consumer.tasks.keys()]);
    expect(misfits).toEqual({ unknownTasks: [{ task: "mail.sned", queue: "mail", jobs: 2 }], unlimitedKeys: [{ key: "smtp", jobs: 1 }] });
    expect(misfitWarnings(misfits)).toEqual([
      '2 queued jobs of task "mail.sned" (queue mail) wait for an app that defines it: this app does not (a typo, or another version?)',
      '1 job use limitKey "smtp", which has no limit: they run unlimited until setLimit(db, "smtp", ...)',
    ]);
    await setLimit(h().db, "smtp", { maxRunning: 2 });
    expect((await findMisfits(h().db, [...consumer.tasks.keys()])).unlimitedKeys).toEqual([]);
    const routes = akadzeRoutes(consumer, { db: h().db, secret: "s" });
    const metrics = await (await routes.request("/metrics", { headers: { authorization: "Bearer s" } })).text();
    expect(metrics).toContain('akadze_jobs_unknown_task{queue="mail",task="mail.sned"} 2');
  });
}, ["node-postgres", "neon-http", "pglite"]);

describe("tasks whose timeout cannot fit the budget", () => {
  let db: Db;
  let client: PGlite;
  beforeAll(async () => {
    client = new PGlite();
    db = drizzle(client) as unknown as Db;
    const { migrate } = await import("../../src/migrate.js");
    await migrate(db);
  });
  afterAll(async () => { await client.close(); });

  const appWith = (timeout: Duration) => {
    const app = createApp();
    const report = app.task("report.build", { timeout }, async () => ({ built: true }));
    app.task("quick", { timeout: "1s" }, async () => {});
    return { app, report };
  };

  it("akadzeRoutes warns when it is built", async () => {
    const { app } = appWith("60s");
    const { warn } = await consoleLines(() => akadzeRoutes(app, { db, secret: "s" }));
    expect(warn).toEqual([expect.stringMatching(/^akadze: task report\.build has a timeout longer than the \/work route's budget \(25s\) minus 1000 ms to claim: its jobs are never run there/)]);
  });

  it("scheduledInvocation warns when it is built, and a fitting app is quiet", async () => {
    expect((await consoleLines(() => scheduledInvocation(appWith("30s").app, { getDb: () => db, budget: "25s" }))).warn)
      .toEqual([expect.stringContaining("task report.build has a timeout longer than the cron handler's budget (25s)")]);
    expect((await consoleLines(() => scheduledInvocation(appWith("5s").app, { getDb: () => db, budget: "25s" }))).warn).toEqual([]);
  });

  it("a nudge that leaves such a job queued says so, once per task", async () => {
    const { app, report } = appWith("10s");
    const web = new Hono().post("/", async (c) => { await report.using(db).enqueue({}); nudge(c, app, { db }); return c.text("ok"); });
    const waits: Promise<unknown>[] = [];
    const { warn } = await consoleLines(async () => {
      for (let i = 0; i < 2; i++) await web.fetch(new Request("http://x/", { method: "POST" }), {}, ctxFor(waits));
      await Promise.all(waits);
    });
    expect(warn).toEqual([expect.stringMatching(/^akadze: task report\.build has a timeout longer than the nudge's budget \(10s\).*a cron or worker with a longer budget must run them$/)]);
    expect(await queryJson(db, sql`select count(*)::int as r from akadze.all_jobs where state = 'queued'`)).toBe(2);
  });

  it("the cron log has one line per failed job besides its summary", async () => {
    const app = createApp();
    const id = await app.task("boom", { maxAttempts: 1 }, async () => { throw new TypeError("no such vendor"); }).using(db).enqueue({});
    const waits: Promise<unknown>[] = [];
    const handler = scheduledInvocation(app, { getDb: () => db, budget: "25s" });
    const { warn, log } = await consoleLines(async () => { handler({ cron: "* * * * *", scheduledTime: 0 }, {}, ctxFor(waits)); await Promise.all(waits); });
    expect(warn).toEqual([`akadze: job ${id} (boom, queue default, attempt 1) failed: TypeError: no such vendor`]);
    expect(log).toEqual([expect.stringMatching(/^akadze invocation \{.*"failed":1/)]);
  });
});

describe("the database, from code", () => {
  it("a database akadze was never migrated on gets the CLI's sentence, not a raw relation error", async () => {
    const bare = new PGlite();
    try {
      const app = createApp();
      const task = app.task("t", async () => {});
      const enqueued = task.using(drizzle(bare) as unknown as Db).enqueue({});
      await expect(enqueued).rejects.toThrow(AkadzeError);
      await expect(enqueued).rejects.toThrow(`${MIGRATE_HINT} (from code: \`await migrate(db)\` at deploy time)`);
      await expect(runOnce(app, { db: drizzle(bare) as unknown as Db })).rejects.toThrow(MIGRATE_HINT);
    } finally {
      await bare.close();
    }
  });

  it("over node-postgres, whose claims are prepared statements, runOnce on a database never migrated gets the same sentence", async () => {
    const database = await createTestDatabase("bare");
    const pool = new pg.Pool({ connectionString: database.url });
    try {
      await pool.query("drop schema akadze cascade");
      const app = createApp();
      app.task("t", async () => {});
      await expect(runOnce(app, { db: drizzlePg(pool) as unknown as Db })).rejects.toThrow(MIGRATE_HINT);
    } finally {
      await pool.end();
      await database.drop();
    }
  });

  describe("connect", () => {
    let database: { url: string; name: string; drop: () => Promise<void> };
    let endpoint: NeonEndpoint;
    beforeAll(async () => {
      database = await createTestDatabase("connect");
      endpoint = await startNeonEndpoint({ connectionString: database.url });
    });
    afterAll(async () => {
      await disconnectAll();
      await endpoint?.close();
      await database?.drop();
    });

    it("gives node-postgres in Node, one per URL", async () => {
      const db = await connect({ DATABASE_URL: database.url });
      expect(isNeonHttp(db)).toBe(false);
      expect(await connect(database.url)).toBe(db);
      expect(await queryJson(db, sql`select count(*)::int as r from akadze.all_jobs`)).toBe(0);
    });

    it("gives neon-http through NEON_FETCH_ENDPOINT, as under akadze dev", async () => {
      const url = new URL(database.url);
      url.port = String(endpoint.port);
      const db = await connect({ DATABASE_URL: url.toString(), NEON_FETCH_ENDPOINT: endpoint.fetchEndpoint });
      expect(isNeonHttp(db)).toBe(true);
      expect(await queryJson(db, sql`select count(*)::int as r from akadze.all_jobs`)).toBe(0);
    });

    it("names the endpoint it could not reach", async () => {
      const db = await connect({ DATABASE_URL: "postgres://postgres@127.0.0.1:9/x", NEON_FETCH_ENDPOINT: "http://127.0.0.1:9/sql" });
      const error = await queryJson(db, sql`select 1 as r`).catch((e: unknown) => e);
      const messages: string[] = [];
      for (let e: any = error; e; e = e.cause) messages.push(String(e.message)); // drizzle and the Neon driver wrap it
      expect(messages).toContainEqual(expect.stringContaining("cannot reach the SQL-over-HTTP endpoint http://127.0.0.1:9/sql (NEON_FETCH_ENDPOINT"));
    });

    it("says which variable is wrong", async () => {
      await expect(connect({ DATABASE_URL: "127.0.0.1:5432/x" })).rejects.toThrow(/^DATABASE_URL must be a postgres:\/\/ URL .*got "127\.0\.0\.1:5432\/x"$/);
      await expect(connect({})).rejects.toThrow(InvalidInput);
      await expect(connect({ DATABASE_URL: "postgres://u:pw@127.0.0.1:5432/x", NEON_FETCH_ENDPOINT: "127.0.0.1:4001/sql" }))
        .rejects.toThrow(/^NEON_FETCH_ENDPOINT must be an http\(s\) URL .*got "127\.0\.0\.1:4001\/sql"$/);
      await expect(connect({ DATABASE_URL: "postgres://u:pw@127.0.0.1:5432/x" }, { driver: "neon-http" }))
        .rejects.toThrow(/^DATABASE_URL's host 127\.0\.0\.1 has no Neon SQL-over-HTTP endpoint of its own: set NEON_FETCH_ENDPOINT/);
    });
  });
});

describe("an invocation's info line", () => {
  it("rounds its duration and says round trip in the singular for one", () => {
    const line = (roundTrips: number, durationMs: number) =>
      invocationLogLines({ ...emptySummary("inv"), claimed: 1, succeeded: 1, roundTrips, durationMs, driver: "neon-http" })[0].text;
    expect(line(1, 478.7806679999994)).toBe("invocation on neon-http: claimed 1, succeeded 1 (1 round trip, 479 ms)");
    expect(line(2, 41.2)).toBe("invocation on neon-http: claimed 1, succeeded 1 (2 round trips, 41 ms)");
    expect(line(7, 25_012.5)).toBe("invocation on neon-http: claimed 1, succeeded 1 (7 round trips, 25.0 s)");
  });
});
