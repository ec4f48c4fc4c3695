// A bundled Worker in real workerd (miniflare), talking Neon's HTTP protocol to a fresh real Postgres
// database through the local Neon endpoint: what the Cloudflare tests share.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { Miniflare } from "miniflare";
import { startNeonEndpoint, type NeonEndpoint } from "../../src/dev/neon-endpoint.js";
import type { Db } from "../../src/index.js";
import { createTestDatabase } from "./postgres.js";

/**
 * Bundles a Worker into `outdir` exactly as `wrangler deploy` would, without uploading it. `config` defaults
 * to the checkout's wrangler.toml, whose functions/cloudflare.ts becomes `outdir`/cloudflare.js.
 * @example await bundleWithWrangler(dir); const scriptPath = join(dir, "cloudflare.js");
 */
export async function bundleWithWrangler(outdir: string, config?: string): Promise<void> {
  await promisify(execFile)("node_modules/.bin/wrangler", ["deploy", "--dry-run", "--outdir", outdir, ...(config ? ["--config", config] : [])], {
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" },
  });
}

export interface WorkerdHarness {
  mf: Miniflare;
  /** The same database over node-postgres, for the test's own reads and writes. */
  db: Db;
  pool: pg.Pool;
  endpoint: NeonEndpoint;
  /** Disposes the Worker, the endpoint and the pool, and drops the database; each step runs even if one fails. */
  close(): Promise<void>;
}

/**
 * Starts the bundled `scriptPath` (modules resolved under `modulesRoot`) with DATABASE_URL,
 * NEON_FETCH_ENDPOINT and CRON_SECRET bound, after `setup` prepared the database.
 */
export async function startWorkerd(o: {
  scriptPath: string; modulesRoot: string; database: Awaited<ReturnType<typeof createTestDatabase>>; secret: string;
  setup: (db: Db) => Promise<unknown>;
  /** The Worker's name and service bindings, e.g. `{ SELF: name }` to bind it to itself. */
  name?: string; serviceBindings?: Record<string, string>;
}): Promise<WorkerdHarness> {
  const { database } = o;
  const pool = new pg.Pool({ connectionString: database.url });
  const db = drizzle(pool) as unknown as Db;
  let endpoint: NeonEndpoint | undefined;
  let mf: Miniflare | undefined;
  const close = async () => {
    await mf?.dispose().catch(() => {});
    await endpoint?.close().catch(() => {});
    await pool.end().catch(() => {});
    await database.drop();
  };
  try {
    await o.setup(db);
    endpoint = await startNeonEndpoint({ connectionString: database.url });
    mf = new Miniflare({
      scriptPath: o.scriptPath,
      modules: true,
      ...(o.name ? { name: o.name } : {}),
      ...(o.serviceBindings ? { serviceBindings: o.serviceBindings } : {}),
      modulesRoot: o.modulesRoot, // module names are paths relative to it; the default (cwd) cannot reach /tmp
      compatibilityDate: "2026-04-01",
      compatibilityFlags: ["nodejs_compat"],
      bindings: {
        // The endpoint reads only the database name from the URL; the host could be Neon's.
        DATABASE_URL: `postgres://postgres@127.0.0.1:${endpoint.port}/${database.name}`,
        NEON_FETCH_ENDPOINT: endpoint.fetchEndpoint,
        CRON_SECRET: o.secret,
      },
    });
    await mf.ready;
  } catch (error) {
    await close();
    throw error;
  }
  return { mf, db, pool, endpoint, close };
}
