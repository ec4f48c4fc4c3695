// A local stand-in for Neon's serverless proxy, so the real `@neondatabase/serverless` driver
// (HTTP `neon()` and WebSocket `Pool`) can run against a plain Postgres or an embedded PGlite.
// It mirrors neondatabase/neon `proxy/src/serverless/sql_over_http.rs` as the 1.x client uses it.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { PGlite } from "@electric-sql/pglite";
import { pgBackend, pgliteBackend } from "./backing-db.js";
import { attachWsRelay } from "./ws-relay.js";
import { errorBody, execute, MAX_RESPONSE_BYTES } from "./sql-over-http.js";

export interface FaultInjector {
  /** Share of /sql requests answered 503 without running anything. */
  failRate?: number;
  /** Share of /sql requests run (and committed) whose socket is then destroyed unanswered. */
  dropRate?: number;
  /** A random wait in [min, max] ms before each response is written. */
  delayMs?: [number, number];
  /** Source of randomness, for reproducible runs. Defaults to Math.random. */
  random?: () => number;
  /**
   * A fault picked for one request by the statements it runs (after the random ones were not drawn):
   * `"fail"` answers 503 before running it (the statements' texts are read first), `"drop"` runs (and
   * commits) it and destroys the socket unanswered, `{ delayMs }` waits before answering.
   */
  plan?: (queries: string[]) => PlannedFault | undefined;
}

/** See FaultInjector.plan. */
export type PlannedFault = "fail" | "drop" | { delayMs: number };

export interface NeonEndpointOptions {
  /** A postgres:// URL of the backing server. Exactly one of this and `pglite`. */
  connectionString?: string;
  pglite?: PGlite;
  /** HTTP/WebSocket port; 0 or omitted picks a free one. */
  port?: number;
  /** Interface to listen on; defaults to 127.0.0.1. */
  host?: string;
  fault?: FaultInjector;
  /**
   * How long a backing connection may sit idle before it is closed (a Postgres backing only). Default 5 s;
   * 0 keeps them open, as a measurement of the backends' CPU needs (a backend that exits takes its CPU along).
   */
  idleTimeoutMs?: number;
}

export interface NeonEndpoint {
  port: number;
  /** e.g. http://127.0.0.1:PORT/sql, for `neonConfig.fetchEndpoint`. */
  fetchEndpoint: string;
  /** What to give a neon client: the real URL, or for PGlite one pointing at its TCP server. */
  connectionString: string;
  /** For `neonConfig.wsProxy`. */
  wsProxy: (host: string, port: number | string) => string;
  close(): Promise<void>;
  /** Live counters: /sql requests seen, and faults injected (503s and dropped responses). */
  stats: { requests: number; faults: number };
}


const LOOPBACK = ["127.0.0.1", "localhost", "::1", "[::1]"];

export async function startNeonEndpoint(options: NeonEndpointOptions): Promise<NeonEndpoint> {
  if (!options.connectionString === !options.pglite) {
    throw new Error("startNeonEndpoint needs exactly one of connectionString and pglite");
  }
  const backend = options.pglite
    ? await pgliteBackend(options.pglite)
    : pgBackend(options.connectionString!, options.idleTimeoutMs);
  const stats = { requests: 0, faults: 0 };
  const fault = options.fault ?? {};
  const random = fault.random ?? Math.random;

  async function handleSql(req: IncomingMessage, res: ServerResponse): Promise<void> {
    stats.requests++;
    if (fault.failRate && random() < fault.failRate) {
      stats.faults++;
      return send(res, 503, { message: "injected fault: service unavailable" });
    }
    let status = 200;
    let body: unknown;
    const headers: Record<string, string> = {};
    let planned: PlannedFault | undefined;
    const failPlanned = new Error("injected fault: service unavailable");
    try {
      body = await execute(backend, req, headers, (queries) => {
        planned = fault.plan?.(queries);
        if (planned === "fail") throw failPlanned;
      });
    } catch (err) {
      if (err === failPlanned) {
        stats.faults++;
        return send(res, 503, { message: failPlanned.message });
      }
      [status, body] = errorBody(err);
    }
    if (planned === "drop") {
      stats.faults++;
      req.socket.destroy();
      return;
    }
    if (typeof planned === "object") {
      stats.faults++;
      await new Promise((r) => setTimeout(r, planned && typeof planned === "object" ? planned.delayMs : 0));
    }
    if (fault.dropRate && random() < fault.dropRate) {
      stats.faults++;
      req.socket.destroy(); // the work is done (maybe committed) but the client never hears
      return;
    }
    if (fault.delayMs) {
      const [min, max] = fault.delayMs;
      await new Promise((r) => setTimeout(r, min + random() * (max - min)));
    }
    send(res, status, body, headers);
  }

  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://endpoint.invalid").pathname;
    if (req.method === "OPTIONS") {
      res.writeHead(204, {
        "Access-Control-Allow-Origin": "*",
        "Access-Control-Allow-Methods": "POST, OPTIONS",
        "Access-Control-Allow-Headers": "*",
      });
      return res.end();
    }
    if (path !== "/sql" || req.method !== "POST") {
      return send(res, 404, { message: "not found: POST /sql or WebSocket /v2" });
    }
    handleSql(req, res).catch((err) => {
      if (!res.headersSent) send(res, 500, { message: String(err) });
    });
  });

  const host = options.host ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, host, () => resolve());
  }).catch(async (err) => {
    await backend.close();
    throw err;
  });
  const port = (server.address() as AddressInfo).port;
  const reachable = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const origin = `${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;

  // The relay only reaches the backing database, addressed by its own host:port or by ours
  // (test helpers give clients a URL naming this endpoint, so several endpoints can coexist).
  const allowed = new Set([
    ...aliases(host, port),
    ...aliases(reachable, port),
    ...aliases(backend.target.host, backend.target.port),
  ]);
  const relay = attachWsRelay(server, (address) => (allowed.has(address) ? backend.target : undefined));

  let closing: Promise<void> | undefined;
  return {
    port,
    fetchEndpoint: `http://${origin}/sql`,
    connectionString: backend.connectionString,
    wsProxy: (h, p) => `${origin}/v2?address=${h}:${p}`,
    stats,
    close() {
      closing ??= (async () => {
        await relay.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await backend.close();
      })();
      return closing;
    },
  };
}

function aliases(host: string, port: number): string[] {
  const names = LOOPBACK.includes(host) ? LOOPBACK : [host];
  return names.map((name) => `${name}:${port}`);
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  let json = JSON.stringify(body);
  if (json.length > MAX_RESPONSE_BYTES) {
    status = 507;
    json = JSON.stringify({ message: `response is too large (max is ${MAX_RESPONSE_BYTES} bytes)` });
    headers = {};
  }
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Access-Control-Allow-Origin": "*",
    ...headers,
  });
  res.end(json);
}
