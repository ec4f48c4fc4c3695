// A task whose query fails keeps the reason: drizzle throws `Failed query: <sql> params: ...` and holds the
// Postgres error (message, SQLSTATE, detail) in `.cause`. The stored entry keeps that chain, and getJob,
// the invocation log line, the dashboard and the CLI (`jobs show`, `--json`) all show it, on every driver.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { Hono } from "hono";
import { createApp, runOnce, type App } from "akadze";
import { akadzeRoutes } from "akadze/hono";
import { akadzeDashboard } from "akadze/dashboard";
import { getJob } from "../../src/ops/jobs.js";
import { invocationLogLines } from "../../src/ops/invocation-log.js";
import { errorHeadline, storedMessage } from "../../src/core/error-causes.js";
import type { Db } from "../../src/db/query.js";
import { forEachDriver } from "../support/drivers.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { CLI_TEST_TIMEOUT_MS, runAkadze } from "../support/cli.js";
import { ManualClock } from "../support/clock.js";

const MISSING = 'relation "no_such_table" does not exist (SQLSTATE 42P01)';

function brokenApp(db: () => Db) {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  const report = app.task("report.read", { maxAttempts: 1 }, async () => {
    await db().execute(sql`select * from no_such_table where id = ${7}`);
  });
  const twice = app.task("order.insert", { maxAttempts: 1 }, async () => {
    await db().execute(sql`insert into error_causes_orders (id) values (1), (1)`);
  });
  return { app, clock, report, twice };
}

async function dashboardPage(app: App, db: Db, path: string, now: () => Date): Promise<string> {
  const web = new Hono().route("/akadze", akadzeRoutes(app, { db, secret: "s", dashboard: akadzeDashboard({ now }) }));
  const login = await web.fetch(new Request("http://127.0.0.1/akadze/ui/login", {
    method: "POST", body: "secret=s", headers: { "content-type": "application/x-www-form-urlencoded" },
  }));
  const cookie = login.headers.get("set-cookie")!.split(";")[0];
  return (await web.fetch(new Request(`http://127.0.0.1/akadze/ui${path}`, { headers: { cookie } }))).text();
}

forEachDriver((h) => {
  it("a task whose query fails stores the Postgres message and SQLSTATE, and getJob, the log line and the dashboard show them", async () => {
    const { app, clock, report } = brokenApp(() => h().db);
    const id = await report.using(h().db).enqueue({});
    const summary = await runOnce(app, { db: h().db, now: clock.now });
    expect(summary.failed).toBe(1);

    const [entry] = (await getJob(h().db, id))!.errors;
    expect(entry.message).toMatch(/^Failed query: select \* from no_such_table/);
    expect(entry.message).toContain(`\ncaused by `);
    expect(entry.message).toContain(MISSING);
    expect(entry.causes?.[0]).toMatchObject({ code: "42P01", message: 'relation "no_such_table" does not exist' });

    const [line] = invocationLogLines(summary).filter((l) => l.level === "warn");
    expect(line.text).toContain(`job ${id} (report.read, queue default, attempt 1) failed: Error: Failed query: select`);
    expect(line.text).toContain(MISSING);

    const page = await dashboardPage(app, h().db, `/jobs/${id}`, clock.now);
    expect(page).toContain("relation &quot;no_such_table&quot; does not exist (SQLSTATE 42P01)");
  });

  it("a failed query's parameters are not stored: not in the message, the stack, the causes, nor the dashboard", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const lookup = app.task("user.lookup", { maxAttempts: 1 }, async () => {
      await h().db.execute(sql`select * from no_such_table where email = ${"ada@example.com"} and token = ${"tok-secret-42"}`);
    });
    const id = await lookup.using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now });

    const [entry] = (await getJob(h().db, id))!.errors;
    expect(entry.message).toMatch(/^Failed query: select \* from no_such_table where email = \$1 and token = \$2\ncaused by /);
    expect(entry.message).toContain(MISSING);
    const stored = JSON.stringify(entry);
    for (const secret of ["ada@example.com", "tok-secret-42", "params:"]) expect(stored).not.toContain(secret);
    expect(entry.stack).toMatch(/^Error: Failed query: select .* = \$2\n\s+at /);
    const page = await dashboardPage(app, h().db, `/jobs/${id}`, clock.now);
    expect(page).toContain("where email = $1");
    expect(page).not.toContain("ada@example.com");
  });

  it("a workflow step whose query fails keeps the Postgres message in the step's errors, and not the query's parameters", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const flow = app.workflow("user.flow", { maxAttempts: 1 }, async (_args, step) => {
      await step.run("lookup", async () => { await h().db.execute(sql`select * from no_such_table where email = ${"ada@example.com"}`); });
    });
    const id = await flow.using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now });

    const [lookup] = (await getJob(h().db, id))!.steps!;
    expect(lookup).toMatchObject({ name: "lookup", state: "failed" });
    const [entry] = lookup.errors;
    expect(entry.message).toMatch(/^Failed query: select \* from no_such_table where email = \$1\ncaused by /);
    expect(entry.message).toContain(MISSING);
    expect(entry.causes?.[0]).toMatchObject({ code: "42P01" });
    expect(JSON.stringify(entry)).not.toContain("ada@example.com");
  });

  it("a unique violation keeps Postgres's detail, naming the key", async () => {
    await h().db.execute(sql`create table if not exists error_causes_orders (id int primary key)`);
    const { app, clock, twice } = brokenApp(() => h().db);
    const id = await twice.using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now });
    const [entry] = (await getJob(h().db, id))!.errors;
    expect(entry.causes?.[0]).toMatchObject({ code: "23505", detail: "Key (id)=(1) already exists.", constraint: "error_causes_orders_pkey" });
    expect(entry.message).toContain("(SQLSTATE 23505; Key (id)=(1) already exists.)");
  });
});

describe("the CLI shows the cause of a stored error", () => {
  let t: TestDatabase;
  let id: number;
  beforeAll(async () => {
    t = await openTestDatabase("error_causes_cli");
    const { app, clock, report } = brokenApp(() => t.db);
    id = await report.using(t.db).enqueue({});
    await runOnce(app, { db: t.db, now: clock.now });
  });
  afterAll(async () => { await t?.close(); });

  it("jobs show puts the Postgres message in its errors table, and --json keeps the causes", async () => {
    const [table, json] = await Promise.all([
      runAkadze(["jobs", "show", String(id)], { DATABASE_URL: t.url }),
      runAkadze(["jobs", "show", String(id), "--json"], { DATABASE_URL: t.url }),
    ]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/1\s+.+UTC\s+Error\s+Failed query: select .*← caused by \w+: relation "no_such_table" does not exist \(SQLSTATE 42P01\)\n/);
    const [entry] = JSON.parse(json.stdout).errors;
    expect(entry.causes[0]).toMatchObject({ code: "42P01", message: 'relation "no_such_table" does not exist' });
    expect(entry.message).toContain(MISSING);
  }, CLI_TEST_TIMEOUT_MS);
});

describe("stored messages", () => {
  it("a message without causes is stored as it was, and its headline is its first line", () => {
    const error = new Error("plain\nsecond line");
    expect(storedMessage(error, error.message)).toBe("plain\nsecond line");
    expect(errorHeadline("plain\nsecond line")).toBe("plain");
  });

  it("every cause of a chain becomes a line, a non-Error cause too, and the headline cuts only the first line", () => {
    const error = new Error(`outer ${"x".repeat(200)}`, { cause: new TypeError("middle", { cause: "the root" }) });
    const message = storedMessage(error, error.message);
    expect(message.split("\n").slice(1)).toEqual(["caused by TypeError: middle", "caused by NonError(string): the root"]);
    expect(errorHeadline(message, 20)).toBe(`outer ${"x".repeat(13)}… ← caused by TypeError: middle ← caused by NonError(string): the root`);
  });
});
