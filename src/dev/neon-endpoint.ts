// A local stand-in for Neon's serverless proxy, so the real `@neondatabase/serverless` driver
// (HTTP `neon()` and WebSocket `Pool`) can run against a plain Postgres or an embedded PGlite.
// It mirrors neondatabase/neon `proxy/src/serverless/sql_over_http.rs` as the 1.x client uses it.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { PGlite } from "@electric-sql/pglite";
import pg from "pg";
import { pgBackend, pgliteBackend, type Backend } from "./backing-db.js";
import { attachWsRelay } from "./ws-relay.js";

export interface FaultInjector {
  /** Share of /sql requests answered 503 without running anything. */
  failRate?: number;
  /** Share of /sql requests run (and committed) whose socket is then destroyed unanswered. */
  dropRate?: number;
  /** A random wait in [min, max] ms before each response is written. */
  delayMs?: [number, number];
  /** Source of randomness, for reproducible runs. Defaults to Math.random. */
  random?: () => number;
}

export interface NeonEndpointOptions {
  /** A postgres:// URL of the backing server. Exactly one of this and `pglite`. */
  connectionString?: string;
  pglite?: PGlite;
  /** HTTP/WebSocket port; 0 or omitted picks a free one. */
  port?: number;
  /** Interface to listen on; defaults to 127.0.0.1. */
  host?: string;
  fault?: FaultInjector;
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

// Neon's proxy defaults: larger requests get 413, larger responses 507.
const MAX_REQUEST_BYTES = 10 * 1024 * 1024;
const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

const ISOLATION: Record<string, string> = {
  ReadUncommitted: "READ UNCOMMITTED",
  ReadCommitted: "READ COMMITTED",
  RepeatableRead: "REPEATABLE READ",
  Serializable: "SERIALIZABLE",
};

const PG_ERROR_FIELDS = [
  "code", "detail", "hint", "position", "internalPosition", "internalQuery", "severity",
  "where", "table", "column", "schema", "dataType", "constraint", "file", "line", "routine",
] as const;

const LOOPBACK = ["127.0.0.1", "localhost", "::1", "[::1]"];

interface QueryData {
  query: string;
  params?: unknown[];
  arrayMode?: boolean;
}

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

export async function startNeonEndpoint(options: NeonEndpointOptions): Promise<NeonEndpoint> {
  if (!options.connectionString === !options.pglite) {
    throw new Error("startNeonEndpoint needs exactly one of connectionString and pglite");
  }
  const backend = options.pglite
    ? await pgliteBackend(options.pglite)
    : pgBackend(options.connectionString!);
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
    try {
      body = await execute(backend, req, headers);
    } catch (err) {
      [status, body] = errorBody(err);
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

async function execute(
  backend: Backend,
  req: IncomingMessage,
  responseHeaders: Record<string, string>,
): Promise<unknown> {
  const h = req.headers;
  let begin = "BEGIN";
  const isolation = header(h, "neon-batch-isolation-level");
  if (isolation !== undefined) {
    if (!ISOLATION[isolation]) throw new HttpError(400, "invalid isolation level");
    begin += ` ISOLATION LEVEL ${ISOLATION[isolation]}`;
  }
  // Only the exact value "true" counts, as in Neon's proxy.
  const readOnly = header(h, "neon-batch-read-only") === "true";
  const deferrable = header(h, "neon-batch-deferrable") === "true";
  if (readOnly) begin += " READ ONLY";
  if (deferrable) begin += " DEFERRABLE";
  const arrayMode = header(h, "neon-array-mode") === "true";

  const payload = parsePayload(await readBody(req));
  const pool = backend.poolFor(databaseOf(header(h, "neon-connection-string")));
  const client = await pool.connect();
  let broken: unknown;
  try {
    if ("query" in payload) return await runQuery(client, payload, arrayMode);
    await client.query(begin);
    try {
      const results = [];
      for (const q of payload.queries) results.push(await runQuery(client, q, arrayMode));
      await client.query("COMMIT");
      if (isolation !== undefined) responseHeaders["Neon-Batch-Isolation-Level"] = isolation;
      if (readOnly) responseHeaders["Neon-Batch-Read-Only"] = "true";
      if (deferrable) responseHeaders["Neon-Batch-Deferrable"] = "true";
      return { results };
    } catch (err) {
      await client.query("ROLLBACK").catch((rollbackErr: unknown) => (broken = rollbackErr));
      throw err;
    }
  } catch (err) {
    // A Postgres error leaves the session usable; anything else (socket died) does not.
    if (!(err instanceof pg.DatabaseError)) broken = err;
    throw err;
  } finally {
    // Like the proxy, never pool a session left inside a transaction (e.g. a lone BEGIN).
    client.release(broken instanceof Error ? broken : client.getTransactionStatus() !== "I");
  }
}

async function runQuery(client: pg.PoolClient, q: QueryData, defaultArrayMode: boolean) {
  // Extended protocol even without params: one statement per query, as on Neon.
  const config = { text: q.query, values: q.params ?? [], rowMode: "array" as const, queryMode: "extended" };
  const result = await client.query<unknown[]>(config);
  const arrayMode = q.arrayMode ?? defaultArrayMode;
  const names = result.fields.map((f) => f.name);
  return {
    command: result.command,
    rowCount: result.rowCount ?? null,
    rowAsArray: arrayMode,
    fields: result.fields.map((f) => ({
      name: f.name,
      dataTypeID: f.dataTypeID,
      tableID: f.tableID,
      columnID: f.columnID,
      dataTypeSize: f.dataTypeSize,
      dataTypeModifier: f.dataTypeModifier,
      format: "text",
    })),
    rows: arrayMode
      ? result.rows
      : result.rows.map((row) => Object.fromEntries(row.map((v, i) => [names[i], v]))),
  };
}

function parsePayload(text: string): QueryData | { queries: QueryData[] } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, `could not parse request body: ${(err as Error).message}`);
  }
  const isQuery = (q: unknown): q is QueryData =>
    typeof q === "object" && q !== null && typeof (q as QueryData).query === "string" &&
    ((q as QueryData).params === undefined || Array.isArray((q as QueryData).params));
  if (isQuery(body)) return body;
  const queries = (body as { queries?: unknown } | null)?.queries;
  if (Array.isArray(queries) && queries.every(isQuery)) return { queries };
  throw new HttpError(400, 'request body must be {"query","params"} or {"queries":[...]}');
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_REQUEST_BYTES) throw new HttpError(413, "request is too large");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function header(headers: IncomingMessage["headers"], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function databaseOf(connectionString: string | undefined): string | undefined {
  if (!connectionString) return undefined;
  try {
    return decodeURIComponent(new URL(connectionString).pathname.slice(1)) || undefined;
  } catch {
    throw new HttpError(400, "invalid Neon-Connection-String header");
  }
}

function errorBody(err: unknown): [number, Record<string, unknown>] {
  if (err instanceof HttpError) return [err.status, { message: err.message }];
  if (err instanceof pg.DatabaseError) {
    const body: Record<string, unknown> = { message: err.message };
    for (const field of PG_ERROR_FIELDS) body[field] = err[field] ?? null;
    return [400, body];
  }
  return [500, { message: err instanceof Error ? err.message : String(err) }];
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
