// `akadze dev`: the Neon endpoint over PGlite or a real Postgres, the example app on localhost, the
// cron tick, the demo, and the bundled Worker (what `wrangler dev` runs) pointed at it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { Miniflare } from "miniflare";
import pg from "pg";
import { queryJson } from "../../src/db/query.js";
import { runDemo } from "../../src/dev/demo.js";
import { startDevServer, type DevServer } from "../../src/dev/dev-server.js";
import { banner, findDashboard } from "../../src/cli/dev-command.js";
import * as example from "../../functions/dev.js";
import { createTestDatabase } from "../support/postgres.js";
import { waitFor } from "../support/wait-for.js";
import { CLI_TEST_TIMEOUT_MS, runAkadze } from "../support/cli.js";
import { bundleWithWrangler } from "../support/workerd.js";
import { listWorkers } from "../../src/ops/workers.js";
import { Hono } from "hono";
import { connect, createApp } from "../../src/index.js";
import { akadzeRoutes, ownUrl } from "../../src/edge/hono.js";
import type { DevEnv } from "../../src/dev/dev-server.js";

const postOrder = (server: DevServer, body: object) => fetch(`${server.appUrl}/orders`, {
  method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
});
const jobStates = (server: DevServer) => queryJson<{ task: string; state: string }[]>(server.db,
  sql`select coalesce(jsonb_agg(jsonb_build_object('task', task, 'state', state) order by id), '[]'::jsonb) as r from akadze.all_jobs`);

describe("akadze dev on PGlite", () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServer({ module: example, database: "memory://", port: 0, tickMs: 200 });
  }, 60_000);
  afterAll(async () => { await server?.close(); });

  it("runs the demo: every job ends terminal and the summary names the failure", async () => {
    let printed = "";
    const result = await runDemo(server, example.demo, { write: (text: string) => { printed += text; } });
    expect(result.counts).toEqual({
      "orders.charge": { succeeded: 4, failed: 1 },
      "orders.ship": { succeeded: 4 },
      "orders.notify": { succeeded: 4 },
    });
    expect(printed).toContain("-> 409"); // the duplicate reference
    expect(printed).toMatch(/12 succeeded, 1 failed/);
    expect(printed).toContain("card declined");
    expect(printed).toContain("Orders: 1 placed, 4 shipped.");
    expect(server.ticks).toBeGreaterThan(0);
  });

  it("prints the CLI's command line, and that line, as printed, lists what it serves", async () => {
    const line = banner(server).split("\n").find((l) => l.includes("npx akadze"))!.trim();
    const printed = /^DATABASE_URL=(\S+) NEON_FETCH_ENDPOINT=(\S+) npx akadze (.+)$/.exec(line);
    expect(printed, line).not.toBeNull();
    const [, url, endpoint, args] = printed!;
    // Nothing else of this process's environment: the line alone must be enough.
    const run = await runAkadze(args.split(" "), { DATABASE_URL: url, NEON_FETCH_ENDPOINT: endpoint });
    expect(run).toMatchObject({ code: 0, stderr: "" });
    expect(run.stdout).toMatch(/orders\.charge|no jobs/);
  }, CLI_TEST_TIMEOUT_MS);

  it("serves the Neon endpoint that the bundled Worker reaches with the values printed for .dev.vars", async () => {
    const outdir = await mkdtemp(join(tmpdir(), "akadze-edge-devworker-"));
    const mf = await (async () => {
      await bundleWithWrangler(outdir);
      return new Miniflare({
        scriptPath: join(outdir, "cloudflare.js"), modulesRoot: outdir, modules: true,
        compatibilityDate: "2026-04-01", compatibilityFlags: ["nodejs_compat"], bindings: { ...server.env },
      });
    })();
    try {
      const res = await mf.dispatchFetch("http://worker/orders", {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ reference: "W-1", item: "tray", quantity: 1 }),
      });
      expect(res.status).toBe(201);
      const { id } = await res.json() as { id: string };
      // The Worker wrote through the endpoint; the dev server reads it back through the same one.
      await waitFor(async () => (await queryJson<string | null>(server.db, sql`select to_jsonb(status) as r from orders where id = ${id}`)) === "paid", "the Worker's nudge");
    } finally {
      await mf.dispose();
      await rm(outdir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("akadze dev with DATABASE_URL", () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let server: DevServer;
  const printed: string[] = [];
  beforeAll(async () => {
    database = await createTestDatabase("edge_dev");
    // A long tick interval: this test calls the tick itself.
    server = await startDevServer({ module: example, database: database.url, port: 0, tickMs: 3_600_000, onInvocationLine: (text) => printed.push(text) });
  });
  afterAll(async () => {
    await server?.close().catch(() => {});
    await database?.drop();
  });

  it("migrates that database, serves the app on it, and its tick runs what the nudge left", async () => {
    const res = await postOrder(server, { reference: "P-1", item: "bowl", quantity: 2 });
    expect(res.status).toBe(201);
    await server.idle(); // the nudge ran the charge; the shipment waits for its warehouse
    expect(await jobStates(server)).toEqual([{ task: "orders.charge", state: "succeeded" }, { task: "orders.ship", state: "queued" }]);
    // The app's nudge logs only failures; the dev terminal gets its line too.
    expect(printed).toEqual([expect.stringMatching(/^nudge on neon-http: claimed 1, succeeded 1 \(\d+ round trips?, \d+ ms\)$/)]);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      expect((await client.query("select item, status from orders")).rows).toEqual([{ item: "bowl", status: "paid" }]);
      await client.query(`update akadze.jobs set args = jsonb_set(args, '{readyAt}', '"2000-01-01T00:00:00Z"') where task = 'orders.ship'`);
    } finally {
      await client.end();
    }
    expect(await server.tick()).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(await server.tick()).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(await jobStates(server)).toEqual([
      { task: "orders.charge", state: "succeeded" }, { task: "orders.ship", state: "succeeded" }, { task: "orders.notify", state: "succeeded" },
    ]);
  });

  it("serves the dashboard, prints its URL at start, and signs in with the dev secret", async () => {
    const url = await findDashboard(server.appUrl!);
    expect(url).toBe(`${server.appUrl}/akadze/ui`);
    expect(banner(server, url)).toContain(`  dashboard ${server.appUrl}/akadze/ui (sign in with ${server.env.CRON_SECRET})`);
    const signIn = (secret: string) => fetch(`${url}/login`, { method: "POST", body: new URLSearchParams({ secret }), redirect: "manual" });
    expect((await signIn("wrong")).status).toBe(401);
    const res = await signIn(server.env.CRON_SECRET);
    expect(res.status).toBe(303);
    const overview = await fetch(url!, { headers: { cookie: res.headers.get("set-cookie")!.split(";")[0] } });
    expect(overview.status).toBe(200);
    expect(await overview.text()).toContain('data-queue="orders"');
  });

  it("answers the work route only with the dev secret", async () => {
    const res = await fetch(`${server.appUrl}/akadze/work`, { method: "POST" });
    expect(res.status).toBe(401);
    const ok = await fetch(`${server.appUrl}/akadze/metrics`, { headers: { authorization: `Bearer ${server.env.CRON_SECRET}` } });
    const text = await ok.text();
    for (const task of ["orders.charge", "orders.ship", "orders.notify"]) {
      expect(text).toContain(`akadze_jobs{queue="orders",task="${task}",state="succeeded"} 1`);
    }
  });
});

describe("akadze dev fans out", () => {
  // A fresh app (the example's jobs take no time, so one invocation is always enough for them), wired as
  // functions/app.ts does with `fanOut: true`: siblings are started through the app's own URL. It logs at the
  // default level (failures only), so the siblings' lines reach the dev terminal through onInvocationLine.
  const slowApp = createApp();
  const slow = slowApp.task("dev.slow", { timeout: "2s" }, async () => { await new Promise((resolve) => setTimeout(resolve, 50)); });
  const web = new Hono<{ Bindings: DevEnv }>().route("/akadze", akadzeRoutes<{ Bindings: DevEnv }>(slowApp, {
    getDb: (c) => connect(c.env, { driver: "neon-http" }), getSecret: (c) => c.env.CRON_SECRET,
    fanOut: (c) => ({ invoke: ownUrl(new URL(c.req.path, c.req.url), { secret: c.env.CRON_SECRET }), maxInvocations: 4 }),
  }));
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let server: DevServer;
  const printed: string[] = [];
  beforeAll(async () => {
    database = await createTestDatabase("edge_dev_fan");
    server = await startDevServer({ module: { app: slowApp, web }, database: database.url, port: 0, tickMs: 3_600_000, onInvocationLine: (text) => printed.push(text) });
  });
  afterAll(async () => {
    await server?.close().catch(() => {});
    await database?.drop();
  });

  it("a tick over a backlog starts siblings through the app's own URL, and workers list shows what it started", async () => {
    await slow.using(server.db).enqueueMany(Array.from({ length: 200 }, () => ({})));
    const tick = await server.tick();
    expect(tick?.fanOut?.started).toHaveLength(3);
    await server.idle(); // the siblings ran in the dev server's waitUntil
    await waitFor(async () => (await jobStates(server)).every((j) => j.state === "succeeded"), "the backlog to drain");
    const workers = await listWorkers(server.db, { all: true });
    expect(workers.filter((w) => w.startedBy === tick!.id).map((w) => w.id).sort()).toEqual([...tick!.fanOut!.started].sort());
    // Siblings (and their successors) that ran jobs printed a line each in the dev terminal; the tick's own
    // line is the dev command's.
    const fannedOut = workers.filter((w) => w.startedBy !== null && w.id !== tick!.id);
    const lines = printed.filter((text) => /^fan-out invocation on neon-http: claimed \d+, succeeded \d+/.test(text));
    expect(lines.length).toBeGreaterThanOrEqual(Math.max(1, fannedOut.filter((w) => w.jobsDone > 0).length));
    expect(lines.length).toBeLessThanOrEqual(fannedOut.length);
  });
});
