// functions/cloudflare.ts as Cloudflare would run it: bundled by wrangler, executed by real workerd
// (miniflare), talking Neon's HTTP protocol to a real Postgres through the local Neon endpoint.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { Miniflare } from "miniflare";
import type { Db } from "../../src/index.js";
import { charge, orders, setup } from "../../functions/app.js";
import { createTestDatabase } from "../support/postgres.js";
import { bundleWithWrangler, startWorkerd, type WorkerdHarness } from "../support/workerd.js";
import { waitFor } from "../support/wait-for.js";

const SECRET = "workerd-test-secret";
const CRON = "* * * * *";

let outdir: string;
let harness: WorkerdHarness | undefined;
let pool: pg.Pool;
let db: Db;
let mf: Miniflare;

/** Bundles the Worker exactly as `wrangler deploy` would, without uploading it. */
async function bundleWorker(dir: string): Promise<string> {
  await bundleWithWrangler(dir);
  return join(dir, "cloudflare.js");
}

beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), "akadze-edge-worker-"));
  const [scriptPath, database] = await Promise.all([bundleWorker(outdir), createTestDatabase("edge_workerd")]);
  harness = await startWorkerd({ scriptPath, modulesRoot: outdir, database, secret: SECRET, setup });
  ({ mf, db, pool } = harness);
}, 120_000);

afterAll(async () => {
  // Each step runs even if an earlier one (or beforeAll) failed, so no database or directory is left behind.
  await harness?.close();
  if (outdir) await rm(outdir, { recursive: true, force: true });
});

beforeEach(async () => {
  await pool.query("truncate orders, akadze.jobs, akadze.job_history, akadze.failed_jobs, akadze.job_progress, akadze.job_logs restart identity");
});

const rows = async (text: string, values: unknown[] = []) => (await pool.query(text, values)).rows;
const post = (path: string, body?: unknown, headers: Record<string, string> = {}) =>
  mf.dispatchFetch(`http://worker${path}`, {
    method: "POST", headers: { "content-type": "application/json", ...headers }, body: body === undefined ? undefined : JSON.stringify(body),
  });

describe("the Cloudflare Worker in workerd", () => {
  it("POST /orders writes the order and its charge job in one transaction", async () => {
    const res = await post("/orders", { reference: "A-1", item: "teapot", quantity: 2 });
    expect(res.status).toBe(201);
    const { id } = await res.json() as { id: string };
    expect(await rows("select reference, item, quantity from orders")).toEqual([{ reference: "A-1", item: "teapot", quantity: 2 }]);
    expect(await rows("select task, args from akadze.all_jobs where task = 'orders.charge'")).toEqual([{ task: "orders.charge", args: { orderId: id, payment: "ok" } }]);
    await waitFor(async () => (await rows("select 1 from akadze.all_jobs where state = 'running'")).length === 0);
  });

  it("a write that fails inside the batch leaves neither the order nor the job", async () => {
    // A real constraint makes the second statement of the batch (the enqueue) fail after the order insert ran.
    await pool.query("alter table akadze.jobs add constraint edge_test_no_declined check (args->>'payment' is distinct from 'declined')");
    try {
      const res = await post("/orders", { reference: "B-1", item: "kettle", quantity: 1, payment: "declined" });
      expect(res.status).toBe(500);
    } finally {
      await pool.query("alter table akadze.jobs drop constraint edge_test_no_declined");
    }
    expect(await rows("select * from orders")).toEqual([]);
    expect(await rows("select * from akadze.all_jobs")).toEqual([]);

    const first = await post("/orders", { reference: "B-2", item: "kettle", quantity: 1, payment: "declined" });
    expect(first.status).toBe(201);
    const again = await post("/orders", { reference: "B-2", item: "other", quantity: 5 });
    expect(again.status).toBe(409);
    expect((await again.json() as any).error.code).toBe("duplicate_order");
    expect(await rows("select item from orders")).toEqual([{ item: "kettle" }]);
    expect(await rows("select count(*)::int as n from akadze.all_jobs")).toEqual([{ n: 1 }]);
    await waitFor(async () => (await rows("select 1 from akadze.all_jobs where state in ('queued', 'running')")).length === 0);
  });

  it("a nudged job starts before any scheduled event fires", async () => {
    const res = await post("/orders", { reference: "C-1", item: "cup", quantity: 3 });
    const { id } = await res.json() as { id: string };
    // No scheduled event is dispatched in this test: only the route's waitUntil can run the charge.
    await waitFor(async () => (await rows("select status from orders where id = $1", [id]))[0]?.status === "paid");
    expect(await rows("select task, state, attempt from akadze.all_jobs order by id")).toEqual([
      { task: "orders.charge", state: "succeeded", attempt: 1 },
      { task: "orders.ship", state: "queued", attempt: 0 },
    ]);
  });

  it("a scheduled event runs the queued jobs", async () => {
    const ids = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
    await drizzle(pool).insert(orders).values(ids.map((id, i) => ({ id, reference: `D-${i}`, item: "plate", quantity: 1 })));
    await charge.using(db).enqueueMany([
      { orderId: ids[0], payment: "ok" }, { orderId: ids[1], payment: "ok" }, { orderId: ids[2], payment: "declined" },
    ]);
    // miniflare types its Fetcher against @cloudflare/workers-types, which this project does not install.
    const worker = await mf.getWorker() as unknown as { scheduled(options: { cron: string }): Promise<{ outcome: string }> };
    const result = await worker.scheduled({ cron: CRON });
    expect(result.outcome).toBe("ok");
    expect(await rows("select task, state, args->>'orderId' as order from akadze.all_jobs where task = 'orders.charge' order by id")).toEqual([
      { task: "orders.charge", state: "succeeded", order: ids[0] },
      { task: "orders.charge", state: "succeeded", order: ids[1] },
      { task: "orders.charge", state: "failed", order: ids[2] },
    ]);
    expect(await rows("select status from orders order by reference")).toEqual([{ status: "paid" }, { status: "paid" }, { status: "placed" }]);
    expect(await rows("select count(*)::int as n from akadze.all_jobs where task = 'orders.ship' and state = 'queued'")).toEqual([{ n: 2 }]);
  });

  it("a charge's log line is kept with its job, and the job's event stream ends with its state and error (job.log and the events route in workerd)", async () => {
    const id = crypto.randomUUID();
    await drizzle(pool).insert(orders).values({ id, reference: "E-1", item: "bowl", quantity: 1 });
    const jobId = await charge.using(db).enqueue({ orderId: id, payment: "declined" });
    const worker = await mf.getWorker() as unknown as { scheduled(options: { cron: string }): Promise<{ outcome: string }> };
    expect((await worker.scheduled({ cron: CRON })).outcome).toBe("ok");
    expect(await rows("select attempt, message from akadze.job_logs where job_id = $1", [jobId])).toEqual([{ attempt: 1, message: `charging order ${id}: declined payment` }]);
    const res = await mf.dispatchFetch(`http://worker/akadze/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${SECRET}` } });
    expect(res.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(await res.text()).toContain('event: end\ndata: {"state":"failed","result":null,"error":"card declined"}');
  });

  it("akadze's routes refuse a request without the secret and serve one with it", async () => {
    for (const headers of [{}, { authorization: "Bearer nope" }] as Record<string, string>[]) {
      const res = await post("/akadze/work", undefined, headers);
      expect(res.status).toBe(401);
      expect((await res.json() as any).error.code).toBe("unauthorized");
    }
    const ok = await post("/akadze/work", { budget: "5s" }, { authorization: `Bearer ${SECRET}` });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ claimed: 0, succeeded: 0 });
  });
});
