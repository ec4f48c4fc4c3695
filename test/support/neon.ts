// Point the real @neondatabase/serverless driver at local Neon endpoints (src/dev/neon-endpoint.ts).
//
// `neonConfig.fetchEndpoint` is global-only in the 1.x driver (neon() has no per-client
// endpoint option), but it may be a function of the connection string's host and port. So each
// client built here gets a URL naming its endpoint's own port, and the installed functions route
// by port; any other URL (e.g. the real 127.0.0.1:5432 one) goes to the last configured endpoint.
import { neon, neonConfig, Pool } from "@neondatabase/serverless";
import { drizzle as drizzleHttp, type NeonHttpDatabase } from "drizzle-orm/neon-http";
import { drizzle as drizzleWs, type NeonDatabase } from "drizzle-orm/neon-serverless";
import ws from "ws";
import type { NeonEndpoint } from "../../src/dev/neon-endpoint.js";

const byPort = new Map<string, NeonEndpoint>();
let fallback: NeonEndpoint | undefined;

function route(port: number | string): NeonEndpoint {
  const endpoint = byPort.get(String(port)) ?? fallback;
  if (!endpoint) throw new Error("call configureNeonForEndpoint() first");
  return endpoint;
}

/** Makes `endpoint` the default target of every neon client in this process. */
export function configureNeonForEndpoint(endpoint: NeonEndpoint): void {
  byPort.set(String(endpoint.port), endpoint);
  fallback = endpoint;
  neonConfig.fetchEndpoint = (_host, port) => route(port).fetchEndpoint;
  neonConfig.wsProxy = (host, port) => route(port).wsProxy(host, port);
  neonConfig.useSecureWebSocket = false;
  // The driver may only pipeline the startup when the server asks for a cleartext password.
  neonConfig.pipelineConnect = false;
  neonConfig.webSocketConstructor = ws; // Node 20 has no global WebSocket
  neonConfig.poolQueryViaFetch = false;
}

/** Registers without changing the default, configuring first if nothing is yet. */
function register(endpoint: NeonEndpoint): void {
  if (!fallback) configureNeonForEndpoint(endpoint);
  else byPort.set(String(endpoint.port), endpoint);
}

/**
 * A connection string for neon clients that routes to `endpoint` even when several endpoints
 * coexist: same credentials as `endpoint.connectionString`, host:port of the endpoint itself
 * (its relay maps that to the backing database), and the given database.
 */
export function neonUrl(endpoint: NeonEndpoint, databaseName: string): string {
  register(endpoint);
  const url = new URL(endpoint.connectionString);
  url.hostname = "127.0.0.1";
  url.port = String(endpoint.port);
  url.pathname = `/${encodeURIComponent(databaseName)}`;
  return url.toString();
}

/** drizzle over Neon's HTTP driver (`neon()`): one request per query, `db.batch` is atomic. */
export function neonHttpDb(endpoint: NeonEndpoint, databaseName: string): NeonHttpDatabase {
  return drizzleHttp({ client: neon(neonUrl(endpoint, databaseName)) });
}

/** drizzle over Neon's WebSocket `Pool`: interactive transactions; call `close` when done. */
export function neonServerlessDb(
  endpoint: NeonEndpoint,
  databaseName: string,
): { db: NeonDatabase; pool: Pool; close: () => Promise<void> } {
  const pool = new Pool({ connectionString: neonUrl(endpoint, databaseName) });
  // Idle clients die when a test drops its database or closes the endpoint; not a test failure.
  pool.on("error", () => {});
  return { db: drizzleWs({ client: pool }), pool, close: () => pool.end() };
}
