import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, migrate, runWorker, type Db } from "../src/index.js";
import { withDatabase } from "./databases.js";
import { enqueueNoops } from "./akadze.js";

const COUNT = Number(process.env.N ?? 20000);
await withDatabase("wprof", async (database) => {
  const pool = new pg.Pool({ connectionString: database.url, max: 10, idleTimeoutMillis: 0 });
  const kinds = new Map<string, { n: number; ms: number }>();
  const query = pool.query.bind(pool) as (...a: unknown[]) => Promise<unknown>;
  (pool as any).query = async (...a: unknown[]) => {
    const text = typeof a[0] === "string" ? a[0] : (a[0] as { text?: string })?.text ?? "";
    const kind = text.includes("unlimited_candidates as (") ? "claim" : text.includes("settle_locked") ? "settle" : text.includes("lease_expires_at = ") && text.length < 2000 ? "heartbeat?" : text.slice(0, 40).replace(/\s+/g, " ");
    const began = performance.now();
    try { return await query(...a); } finally { const k = kinds.get(kind) ?? { n: 0, ms: 0 }; k.n++; k.ms += performance.now() - began; kinds.set(kind, k); }
  };
  const db = drizzle(pool) as unknown as Db;
  await migrate(db);
  let ran = 0; let allRan!: () => void;
  const done = new Promise<void>((r) => { allRan = r; });
  const app = createApp();
  const noop = app.task("bench.noop", async () => { if (++ran === COUNT) allRan(); });
  await enqueueNoops(noop, db, COUNT);
  kinds.clear();
  const stop = new AbortController();
  const began = performance.now();
  const worker = runWorker(app, { db, slots: 10, signal: stop.signal });
  await Promise.race([done, worker]); stop.abort(); await worker;
  const ms = performance.now() - began;
  console.log(`jobs/s ${Math.round(COUNT / ms * 1000)}`);
  for (const [k, v] of kinds) console.log(k.padEnd(44), "n", v.n, "per job", (v.n / COUNT).toFixed(4), "avg ms", (v.ms / v.n).toFixed(2));
  await pool.end();
});
