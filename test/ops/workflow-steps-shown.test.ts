// A workflow's steps, results, errors and what it waits for, as `akadze jobs show` (text and --json) and
// the dashboard's job page show them.
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { Hono } from "hono";
import { createApp, runOnce, type Db } from "../../src/index.js";
import { akadzeRoutes } from "../../src/edge/hono.js";
import { akadzeDashboard } from "../../src/edge/dashboard/index.js";
import { ManualClock } from "../support/clock.js";
import { CLI_TEST_TIMEOUT_MS, runAkadze } from "../support/cli.js";
import { createTestDatabase } from "../support/postgres.js";

// Each test spawns the CLI (tsx start-up each time): its timeout allows for that on a loaded machine.
vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: pg.Pool;
let db: Db;
let id: number;
const clock = new ManualClock();
const app = createApp({ clock: clock.now });

beforeAll(async () => {
  database = await createTestDatabase("wf_views");
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  db = drizzle(pool) as unknown as Db;
  id = await app.workflow("order.fulfil", { backoff: () => "1m" }, async (_a, step) => {
    await step.run("charge", () => ({ chargeId: "ch_1" }));
    await Promise.all([
      step.run("label", () => { throw new Error("printer offline"); }),
      step.waitForEvent("shipped", { event: "order.shipped", match: { orderId: 7 }, timeout: "7d" }),
    ]);
  }).using(db).enqueue({});
  await runOnce(app, { db, now: clock.now });
});
afterAll(async () => { await pool?.end(); await database?.drop(); });

it("jobs show lists the steps: results, the last error, and what a waiting step waits for", async () => {
  const text = await runAkadze(["jobs", "show", String(id)], { DATABASE_URL: database.url });
  expect(text.code).toBe(0);
  expect(text.stdout).toContain("steps (3):");
  expect(text.stdout).toMatch(/charge\s+run\s+done\s+1\s+\{"chargeId":"ch_1"\}/);
  expect(text.stdout).toMatch(/label\s+run\s+retrying\s+1\s+printer offline/);
  expect(text.stdout).toMatch(/shipped\s+event\s+waiting\s+1\s+event "order.shipped" matching \{"orderId":7\} until 2026-06-08T12:00:00.000Z/);

  const json = await runAkadze(["jobs", "show", String(id), "--json"], { DATABASE_URL: database.url });
  const job = JSON.parse(json.stdout);
  expect(job.steps.map((s: any) => [s.name, s.kind, s.state])).toEqual([["charge", "run", "done"], ["label", "run", "retrying"], ["shipped", "event", "waiting"]]);
  expect(job.steps[2]).toMatchObject({ event: "order.shipped", match: { orderId: 7 }, wakeAt: "2026-06-08T12:00:00.000Z",
    waitingFor: 'event "order.shipped" matching {"orderId":7} until 2026-06-08T12:00:00.000Z' });
  expect(job.steps[0].waitingFor).toBeNull();
  expect(job.steps[1].errors[0]).toMatchObject({ attempt: 1, kind: "Error", message: "printer offline" });
});

it("the dashboard's job page shows the steps", async () => {
  const web = new Hono().route("/akadze", akadzeRoutes(app, { db, secret: "s3cret", dashboard: akadzeDashboard({ now: clock.now }) }));
  const login = await web.fetch(new Request("http://127.0.0.1/akadze/ui/login", {
    method: "POST", body: new URLSearchParams({ secret: "s3cret" }).toString(), headers: { "content-type": "application/x-www-form-urlencoded" },
  }));
  const cookie = login.headers.get("set-cookie")!.split(";")[0];
  const page = await (await web.fetch(new Request(`http://127.0.0.1/akadze/ui/jobs/${id}`, { headers: { cookie } }))).text();
  expect(page).toContain("Steps (3)");
  expect(page).toContain("printer offline");
  expect(page).toContain("event &quot;order.shipped&quot; matching {&quot;orderId&quot;:7} until 2026-06-08T12:00:00.000Z");
});
