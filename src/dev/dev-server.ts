// `akadze dev`: the local Neon-compatible endpoint over PGlite (or a Postgres from DATABASE_URL),
// the application's routes on localhost, and a timer that calls the work route as a cron would.
import { lockPgliteDirectory, SHARE_DEV_DATABASE } from "./pglite-lock.js";
import { PGlite } from "@electric-sql/pglite";
import { neonHttpDb } from "../connect.js";
import type { ExecutionContext } from "hono";
import type { App } from "../app/app.js";
import type { Db } from "../db/query.js";
import { migrate } from "../migrate.js";
import { setDevLogSink } from "../app/log.js";
import type { RunSummary } from "../runtime/run-once.js";
import { startNeonEndpoint, type NeonEndpoint } from "./neon-endpoint.js";
import { serveFetch, type Served } from "./serve.js";
import type { DemoScenario } from "./demo.js";

export const DEV_PORT = 4000;
export const DEV_DATA_DIR = ".akadze/pglite";
export const DEV_SECRET = "dev-secret";
export const DEV_TICK_MS = 1_000;
/** Where the application mounts `akadzeRoutes`. */
export const WORK_PATH = "/akadze/work";
/** Where the dashboard is when the application enables it there (`akadzeDashboard()`). */
export const DASHBOARD_PATH = "/akadze/ui";

/** The env the application's routes see: what Cloudflare bindings or Vercel's process.env hold in production. */
export interface DevEnv {
  DATABASE_URL: string;
  NEON_FETCH_ENDPOINT: string;
  CRON_SECRET: string;
}

/** What `akadze dev` loads: the application, its HTTP app, its own tables, and optionally a demo. */
export interface DevModule {
  app: App;
  web: { fetch(request: Request, env: DevEnv, ctx: ExecutionContext): Response | Promise<Response> };
  setup?(db: Db): Promise<void>;
  demo?: DemoScenario;
}

export interface DevServerOptions {
  module: DevModule;
  /** A postgres:// URL, a PGlite data directory, or "memory://". Default `.akadze/pglite`. */
  database?: string;
  /** The app's port; the Neon endpoint listens on the next one. 0 picks free ports. Default 4000. */
  port?: number;
  /** Serve the app and tick its work route (default); false runs only the Neon endpoint (for `wrangler dev`). */
  http?: boolean;
  tickMs?: number;
  secret?: string;
  /** Every tick's summary. */
  onTick?: (summary: RunSummary) => void;
  /**
   * The line of every other invocation the served app runs and logs only at `info`: its nudges and its
   * fan-out siblings, read from the app's log (`setDevLogSink`, set for the server's life, for the whole process).
   */
  onInvocationLine?: (text: string) => void;
  onError?: (error: unknown) => void;
}

export interface DevServer {
  /** e.g. http://127.0.0.1:4000; absent with `http: false`. */
  appUrl?: string;
  endpoint: NeonEndpoint;
  /** What `wrangler dev` needs in .dev.vars to reach the same database. */
  env: DevEnv;
  /** The database through the endpoint (neon-http), as the application sees it. */
  db: Db;
  /** "PGlite in memory", "PGlite in .akadze/pglite" or the Postgres URL without its password. */
  backing: string;
  ticks: number;
  /** One tick now: the work route called once, as the timer does. Undefined if one is in flight. */
  tick(): Promise<RunSummary | undefined>;
  /** Resolves once no tick and no `waitUntil` work (nudges) is in flight. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts everything `akadze dev` runs, migrated and ready.
 * @example const dev = await startDevServer({ module: await import("./functions/dev.ts"), database: "memory://" });
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const { module } = options;
  const database = options.database ?? DEV_DATA_DIR;
  const port = options.port ?? DEV_PORT;
  const http = options.http ?? true;
  const onError = options.onError ?? ((error: unknown) => console.error("akadze dev:", error));
  const closers: (() => Promise<unknown>)[] = [];
  const closeAll = async () => { for (const close of closers.splice(0).reverse()) await close().catch(onError); };

  try {
    let endpoint: NeonEndpoint;
    let databaseName = "postgres";
    let backing: string;
    const endpointPort = port === 0 ? 0 : port + 1;
    if (/^postgres(ql)?:\/\//.test(database)) {
      const url = new URL(database);
      databaseName = decodeURIComponent(url.pathname.slice(1)) || "postgres";
      url.password = url.password ? "***" : "";
      backing = url.toString();
      endpoint = await startNeonEndpoint({ connectionString: database, port: endpointPort });
    } else {
      const inMemory = database === "memory://";
      if (!inMemory) {
        const release = lockPgliteDirectory(database, SHARE_DEV_DATABASE);
        closers.push(async () => release());
      }
      const pglite = inMemory ? new PGlite() : new PGlite(database);
      closers.push(() => pglite.close());
      backing = inMemory ? "PGlite in memory" : `PGlite in ${database}`;
      endpoint = await startNeonEndpoint({ pglite, port: endpointPort });
    }
    closers.push(() => endpoint.close());

    const env: DevEnv = {
      DATABASE_URL: `postgres://postgres@127.0.0.1:${endpoint.port}/${encodeURIComponent(databaseName)}`,
      NEON_FETCH_ENDPOINT: endpoint.fetchEndpoint,
      CRON_SECRET: options.secret ?? DEV_SECRET,
    };
    // As the app would connect: this host routed to the local endpoint, any other host left to Neon.
    const db = neonHttpDb(env.DATABASE_URL, env.NEON_FETCH_ENDPOINT);
    await migrate(db);
    await module.setup?.(db);

    const pending = new Set<Promise<unknown>>();
    const track = (promise: Promise<unknown>) => {
      const settled = promise.catch(onError).finally(() => pending.delete(settled));
      pending.add(settled);
    };
    const ctx: ExecutionContext = { waitUntil: track, passThroughOnException() {}, props: {} };
    if (options.onInvocationLine) {
      const show = options.onInvocationLine;
      setDevLogSink((record) => show(record.message));
      closers.push(async () => setDevLogSink(undefined));
    }

    let served: Served | undefined;
    if (http) {
      served = await serveFetch((request) => module.web.fetch(request, env, ctx), port);
      closers.push(() => served!.close());
    }

    let inFlight: Promise<RunSummary | undefined> | undefined;
    const server: DevServer = {
      appUrl: served?.url, endpoint, env, db, backing, ticks: 0,
      tick() {
        if (!served || inFlight) return Promise.resolve(undefined);
        inFlight = callWorkRoute(served.url, env.CRON_SECRET).then(
          (summary) => { server.ticks++; options.onTick?.(summary); return summary; },
          (error) => { onError(error); return undefined; },
        ).finally(() => { inFlight = undefined; });
        return inFlight;
      },
      async idle() {
        while (inFlight || pending.size > 0) await Promise.all([inFlight, ...pending]);
      },
      async close() {
        clearInterval(timer);
        await server.idle();
        await closeAll();
      },
    };
    const timer = setInterval(() => { void server.tick(); }, options.tickMs ?? DEV_TICK_MS);
    if (!served) clearInterval(timer); // nothing to tick: the app runs elsewhere (wrangler dev)
    return server;
  } catch (error) {
    await closeAll();
    throw error;
  }
}

/** What a cron does: POST the work route with the bearer secret. */
async function callWorkRoute(appUrl: string, secret: string): Promise<RunSummary> {
  const res = await fetch(`${appUrl}${WORK_PATH}`, { method: "POST", headers: { authorization: `Bearer ${secret}` } });
  const body = await res.json() as RunSummary & { error?: { message: string } };
  if (!res.ok) throw new Error(`${WORK_PATH} answered ${res.status}: ${body.error?.message ?? JSON.stringify(body)}`);
  return body;
}
