// The Vercel function (functions/vercel.ts via api/index.ts), called as Vercel's Node.js runtime calls a
// Web handler: a real Request and a context with waitUntil, env from process.env, neon-http to real Postgres.
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { readFileSync } from "node:fs";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { startNeonEndpoint, type NeonEndpoint } from "../../src/dev/neon-endpoint.js";
import { parseDuration, type Db } from "../../src/index.js";
import { charge, orders, setup } from "../../functions/app.js";
import { GET, POST } from "../../api/index.js";
import { VERCEL_BUDGET } from "../../functions/vercel.js";
import { createTestDatabase } from "../support/postgres.js";

const SECRET = "vercel-cron-secret";
const vercelJson = JSON.parse(readFileSync(new URL("../../vercel.json", import.meta.url), "utf8"));

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let pool: pg.Pool;
let endpoint: NeonEndpoint;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase("edge_vercel");
  pool = new pg.Pool({ connectionString: database.url });
  db = drizzle(pool) as unknown as Db;
  await setup(db);
  endpoint = await startNeonEndpoint({ connectionString: database.url });
  vi.stubEnv("DATABASE_URL", `postgres://postgres@127.0.0.1:${endpoint.port}/${database.name}`);
  vi.stubEnv("NEON_FETCH_ENDPOINT", endpoint.fetchEndpoint);
  vi.stubEnv("CRON_SECRET", SECRET);
});

afterAll(async () => {
  await endpoint?.close().catch(() => {});
  await pool?.end().catch(() => {});
  await database?.drop();
});

beforeEach(async () => { await pool.query("truncate orders, akadze.jobs, akadze.job_history, akadze.failed_jobs restart identity"); });

const rows = async (text: string) => (await pool.query(text)).rows;

/** What Vercel passes as the second argument: waitUntil, whose promises we can await. */
function vercelContext() {
  const pending: Promise<unknown>[] = [];
  return { waitUntil: (p: Promise<unknown>) => { pending.push(p); }, settled: () => Promise.all(pending) };
}

describe("the Vercel function", () => {
  it("POST /api/orders writes the order and its job, and runs the job through Vercel's waitUntil", async () => {
    const ctx = vercelContext();
    const res = await POST(new Request("https://app.example/api/orders", {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ reference: "V-1", item: "lamp", quantity: 1 }),
    }), ctx);
    expect(res.status).toBe(201);
    const { id } = await res.json();
    await ctx.settled();
    expect(await rows(`select id, status from orders`)).toEqual([{ id, status: "paid" }]);
    expect(await rows(`select task, state from akadze.all_jobs order by id`)).toEqual([
      { task: "orders.charge", state: "succeeded" }, { task: "orders.ship", state: "queued" },
    ]);
  });

  it("the cron in vercel.json calls GET on the work route with CRON_SECRET and runs the queued jobs", async () => {
    const [cron] = vercelJson.crons;
    // Jobs enqueued directly, so no nudge races the cron for them.
    const ids = [crypto.randomUUID(), crypto.randomUUID()];
    await drizzle(pool).insert(orders).values(ids.map((id, i) => ({ id, reference: `V-${i}`, item: "lamp", quantity: 1 })));
    await charge.using(db).enqueueMany([{ orderId: ids[0], payment: "ok" }, { orderId: ids[1], payment: "declined" }]);
    const res = await GET(new Request(`https://app.example${cron.path}`, { headers: { authorization: `Bearer ${SECRET}`, "user-agent": "vercel-cron/1.0" } }));
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ claimed: 2, succeeded: 1, failed: 1 });
    expect(await rows(`select task, state from akadze.all_jobs order by id`)).toEqual([
      { task: "orders.charge", state: "succeeded" }, { task: "orders.charge", state: "failed" }, { task: "orders.ship", state: "queued" },
    ]);
  });

  it("refuses the work route without the secret", async () => {
    for (const headers of [{}, { authorization: "Bearer guess" }] as Record<string, string>[]) {
      const res = await GET(new Request("https://app.example/api/akadze/work", { headers }));
      expect(res.status).toBe(401);
      expect((await res.json()).error.code).toBe("unauthorized");
    }
  });

  it("keeps an invocation's budget inside the function's maxDuration", async () => {
    const maxDurationMs = vercelJson.functions["api/index.ts"].maxDuration * 1000;
    expect(parseDuration(VERCEL_BUDGET)).toBeLessThan(maxDurationMs);
    const res = await POST(new Request("https://app.example/api/akadze/work", {
      method: "POST", headers: { authorization: `Bearer ${SECRET}` }, body: JSON.stringify({ budget: maxDurationMs }),
    }));
    expect(res.status).toBe(400);
    expect((await res.json()).error.issues[0].path).toBe("budget");
  });
});
