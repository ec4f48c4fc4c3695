// The database an application's routes, cron handler and tasks talk to, picked for the runtime, so apps
// need not each write their own "neon-http here, node-postgres there" helper.
import { Client, neon, neonConfig, Pool } from "@neondatabase/serverless";
import { drizzle as drizzleNeonHttp } from "drizzle-orm/neon-http";
import { drizzle as drizzleNeonWs } from "drizzle-orm/neon-serverless";
import { AkadzeError, InvalidInput } from "./core/errors.js";
import type { Db } from "./db/query.js";

/** The environment `connect` reads: Worker bindings, `process.env`, or what `akadze dev` gives the app. */
export interface ConnectEnv {
  /** postgres://user:password@host/db */
  DATABASE_URL?: string;
  /** Where the Neon driver sends SQL when it is not Neon's own endpoint, e.g. `akadze dev`'s http://127.0.0.1:4001/sql. */
  NEON_FETCH_ENDPOINT?: string;
}

/** Which drizzle driver `connect` uses. `auto` (default): see `connect`. */
export type ConnectDriver = "auto" | "neon-http" | "node-postgres";

/** Options of `connect`. @example const options: ConnectOptions = { driver: "neon-http" }; */
export interface ConnectOptions {
  driver?: ConnectDriver;
  /** Connections of the node-postgres pool. Default 10. */
  max?: number;
}

/** A postgres:// (or postgresql://) URL. */
export const POSTGRES_URL = /^postgres(ql)?:\/\//i;
const cache = new Map<string, { db: Promise<Db>; close: () => Promise<void> }>();
const endpoints = new Map<string, string>();

/**
 * A drizzle database for `DATABASE_URL`, one per URL and driver for the life of the process (pools are
 * reused across requests). `auto` picks neon-http when `NEON_FETCH_ENDPOINT` is set (the local endpoint
 * under `akadze dev`) or the code runs on an edge runtime (Cloudflare Workers, Vercel Edge), and
 * node-postgres in Node. A missing or malformed URL or endpoint is an `InvalidInput` naming the variable.
 * @example
 * web.post("/orders", async (c) => { const db = await connect(c.env); ... });
 * const db = await connect(process.env.DATABASE_URL);
 */
export async function connect(source: string | ConnectEnv | undefined = defaultEnv(), options: ConnectOptions = {}): Promise<Db> {
  const env: ConnectEnv = typeof source === "string" || source === undefined ? { DATABASE_URL: source } : source;
  const url = checkUrl(env.DATABASE_URL);
  const driver = options.driver ?? "auto";
  if (!["auto", "neon-http", "node-postgres"].includes(driver)) throw new InvalidInput(`connect: driver must be "auto", "neon-http" or "node-postgres", got ${JSON.stringify(driver)}`);
  const http = driver === "neon-http" || (driver === "auto" && (Boolean(env.NEON_FETCH_ENDPOINT) || onEdge()));
  const key = `${http ? "neon-http" : "node-postgres"} ${url} ${env.NEON_FETCH_ENDPOINT ?? ""}`;
  let entry = cache.get(key);
  if (!entry) {
    if (http) entry = { db: Promise.resolve(neonHttpDb(url, env.NEON_FETCH_ENDPOINT)), close: async () => {} };
    else entry = nodePostgres(url, options.max ?? 10);
    cache.set(key, entry);
    entry.db.catch(() => cache.delete(key));
  }
  return entry.db;
}

/** Which driver `withPool` uses. `auto` (default): see `withPool`. */
export type PoolDriver = "auto" | "neon-serverless" | "node-postgres";

/** Options of `withPool`. @example const options: PoolOptions = { driver: "neon-serverless", max: 1 }; */
export interface PoolOptions {
  driver?: PoolDriver;
  /** Connections of a pool opened for the call. Default 1: one transaction at a time. */
  max?: number;
}

/**
 * Runs `work` with a database whose connections keep a session, for interactive transactions
 * (`db.transaction(async (tx) => ...)`) where `connect` gives neon-http. On an edge runtime, or when
 * `NEON_FETCH_ENDPOINT` is set, that is Neon's WebSocket `Pool`, opened for this call and ended when `work`
 * settles: a Worker may not keep a socket past its request, so the database is only good inside `work`. In
 * Node otherwise it is `connect`'s node-postgres pool (kept for the process). Resolves to what `work` does.
 * @example
 * const id = await withPool(c.env, (db) => db.transaction(async (tx) => {
 *   const [order] = await tx.insert(orders).values(o).returning({ id: orders.id });
 *   await charge.using(tx).enqueue({ orderId: order.id });
 *   return order.id;
 * }));
 */
export async function withPool<T>(source: string | ConnectEnv | undefined, work: (db: Db) => Promise<T>, options: PoolOptions = {}): Promise<T> {
  const env: ConnectEnv = typeof source === "string" || source === undefined ? { DATABASE_URL: source } : source;
  const url = checkUrl(env.DATABASE_URL);
  const driver = options.driver ?? "auto";
  if (!["auto", "neon-serverless", "node-postgres"].includes(driver)) {
    throw new InvalidInput(`withPool: driver must be "auto", "neon-serverless" or "node-postgres", got ${JSON.stringify(driver)}`);
  }
  const max = options.max ?? 1;
  if (!Number.isInteger(max) || max < 1) throw new InvalidInput(`withPool: max must be a whole number of connections, 1 or more, got ${JSON.stringify(max)}`);
  if (typeof work !== "function") throw new InvalidInput("withPool: the second argument must be a function (db) => ...");
  const endpoint = env.NEON_FETCH_ENDPOINT ? checkEndpoint(env.NEON_FETCH_ENDPOINT) : undefined;
  if (driver === "node-postgres" || (driver === "auto" && !endpoint && !onEdge())) {
    return work(await connect(env, { driver: "node-postgres", max: options.max }));
  }
  const pool = new Pool({ connectionString: url, max });
  if (endpoint) pool.Client = localClient(endpoint); // the Pool's own class field would override a `Client` option
  pool.on("error", () => {}); // an idle connection that drops; the next query reports it
  try {
    return await work(drizzleNeonWs({ client: pool }) as unknown as Db);
  } finally {
    await pool.end().catch(() => {});
  }
}

/**
 * A Neon client that reaches Postgres through the WebSocket relay beside a local SQL-over-HTTP endpoint
 * (`akadze dev`'s, or one of the tests'): plain ws://, no pipelined startup (the relay's server may not ask for
 * a password). Set on the client, not on the global neonConfig, so the app's other Neon clients keep theirs.
 */
function localClient(endpoint: string): typeof Client {
  const origin = new URL(endpoint).host;
  const WebSocketCtor = (globalThis as { WebSocket?: unknown }).WebSocket ?? requireInNode("ws");
  return class LocalClient extends Client {
    constructor(config?: ConstructorParameters<typeof Client>[0]) {
      super(config);
      const own = this.neonConfig;
      own.wsProxy = (host, port) => `${origin}/v2?address=${host}:${port}`;
      own.useSecureWebSocket = false;
      own.pipelineConnect = false;
      own.webSocketConstructor = WebSocketCtor as typeof own.webSocketConstructor;
    }
  };
}

/**
 * Closes every database `connect` opened (node-postgres pools), e.g. at the end of a script or test.
 * @example await disconnectAll();
 */
export async function disconnectAll(): Promise<void> {
  const entries = [...cache.values()];
  cache.clear();
  await Promise.all(entries.map((e) => e.close()));
}

/**
 * A drizzle neon-http database; `endpoint` overrides Neon's SQL-over-HTTP URL for this host:port only.
 * @example const db = neonHttpDb(url, "http://127.0.0.1:4001/sql");
 */
export function neonHttpDb(databaseUrl: string, endpoint?: string): Db {
  const url = new URL(checkUrl(databaseUrl));
  const hostPort = `${url.hostname}:${url.port || "5432"}`;
  if (endpoint !== undefined) endpoints.set(hostPort, checkEndpoint(endpoint));
  else if (!endpoints.has(hostPort) && !hasNeonEndpoint(url.hostname)) {
    throw new InvalidInput(`DATABASE_URL's host ${url.hostname} has no Neon SQL-over-HTTP endpoint of its own: set NEON_FETCH_ENDPOINT ` +
      `(\`akadze dev\` prints it, e.g. http://127.0.0.1:4001/sql), or use node-postgres`);
  }
  routeEndpoints();
  return drizzleNeonHttp({ client: neon(url.toString()) }) as unknown as Db;
}

let neonDefault: typeof neonConfig.fetchEndpoint | undefined;
let routing: typeof neonConfig.fetchEndpoint | undefined;

/**
 * neonConfig.fetchEndpoint is global in the 1.x driver: route the hosts we were told about, and anything
 * else to whatever was configured before (Neon's default unless the app set its own). Re-installed if
 * something replaced it since.
 */
function routeEndpoints(): void {
  if (routing !== undefined && neonConfig.fetchEndpoint === routing) return;
  neonDefault = neonConfig.fetchEndpoint;
  routing = (host, port, options) => {
    const own = endpoints.get(`${host}:${port || "5432"}`);
    if (own) return own;
    return typeof neonDefault === "function" ? neonDefault(host, port, options) : neonDefault!;
  };
  neonConfig.fetchEndpoint = routing;
  // The driver's own failure is a bare "fetch failed": name the endpoint, the usual culprit locally.
  const fetchBefore = neonConfig.fetchFunction as typeof fetch | undefined;
  neonConfig.fetchFunction = async (url: string, init?: RequestInit) => {
    try {
      return await (fetchBefore ?? fetch)(url, init);
    } catch (error) {
      throw new AkadzeError(`cannot reach the SQL-over-HTTP endpoint ${url} (NEON_FETCH_ENDPOINT or Neon's own): ${(error as Error)?.message ?? error}`, { cause: error });
    }
  };
}

/** Neon derives its SQL-over-HTTP endpoint from a domain name (api.<rest of the host>); a bare or IP host has none. */
export function hasNeonEndpoint(hostname: string): boolean {
  return hostname.includes(".") && !/^[\d.]+$|^\[/.test(hostname);
}

/** A node-postgres pool of `max` connections (10 s connect timeout, idle-client errors left to the next query), and its close. */
export function nodePostgres(url: string, max: number): { db: Promise<Db>; close: () => Promise<void> } {
  let pool: { end(): Promise<void> } | undefined;
  const db = (async () => {
    const pg = requireInNode("pg");
    const { drizzle } = requireInNode("drizzle-orm/node-postgres");
    const created = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 10_000 });
    created.on("error", () => {}); // an idle client dropped by the server; the next query reports it
    pool = created;
    return drizzle(created) as Db;
  })();
  return { db, close: async () => { await db.catch(() => {}); await pool?.end(); } };
}

/**
 * Loads a Node-only module out of sight of bundlers and of the Workers runtime: an `import` of pg would pull
 * Node sockets into every edge bundle, and workerd refuses a computed `import(x)`. Only called in Node;
 * resolved from this file, so it finds akadze's pg and the app's drizzle-orm (a peer dependency; drizzle
 * tells its classes apart by `entityKind` names, so its CommonJS build mixes with the ESM one).
 */
function requireInNode(specifier: string): any {
  const getBuiltin = (globalThis as { process?: { getBuiltinModule?: (id: string) => any } }).process?.getBuiltinModule;
  if (!getBuiltin) throw new InvalidInput('connect: node-postgres needs Node 20.16 or later here; pass { driver: "neon-http" } or build the drizzle database yourself');
  return getBuiltin("node:module").createRequire(import.meta.url)(specifier);
}

function checkUrl(value: string | undefined): string {
  if (value === undefined || value === "") throw new InvalidInput("DATABASE_URL is not set: expected postgres://user:password@host/database");
  if (typeof value !== "string" || !POSTGRES_URL.test(value)) {
    throw new InvalidInput(`DATABASE_URL must be a postgres:// URL such as postgres://user:password@host/database, got ${JSON.stringify(redact(String(value)))}`);
  }
  try {
    new URL(value);
  } catch {
    throw new InvalidInput(`DATABASE_URL is not a valid URL: ${JSON.stringify(redact(value))}`);
  }
  return value;
}

function checkEndpoint(value: string): string {
  let url: URL | undefined;
  try { url = new URL(value); } catch { /* reported below */ }
  if (!url || !/^https?:$/.test(url.protocol)) {
    throw new InvalidInput(`NEON_FETCH_ENDPOINT must be an http(s) URL such as http://127.0.0.1:4001/sql (\`akadze dev\` prints it), got ${JSON.stringify(value)}`);
  }
  return value;
}

/** The URL without its password, for messages. */
export function redact(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, "$1:***@");
}

function onEdge(): boolean {
  const g = globalThis as { WebSocketPair?: unknown; EdgeRuntime?: unknown; navigator?: { userAgent?: string } };
  return typeof g.WebSocketPair === "function" || typeof g.EdgeRuntime === "string" || g.navigator?.userAgent === "Cloudflare-Workers";
}

function defaultEnv(): ConnectEnv | undefined {
  const env = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env;
  return env ? { DATABASE_URL: env.DATABASE_URL, NEON_FETCH_ENDPOINT: env.NEON_FETCH_ENDPOINT } : undefined;
}
