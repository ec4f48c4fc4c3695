// Neon's SQL-over-HTTP protocol on top of a pg client: a request body in, Postgres runs it, a response
// body out (raw text values, Neon's field and error shapes), as @neondatabase/serverless 1.x expects.
import type { IncomingMessage } from "node:http";
import pg from "pg";
import type { Backend } from "./backing-db.js";

// Neon's proxy defaults: larger requests get 413, larger responses 507.
const MAX_REQUEST_BYTES = 10 * 1024 * 1024;
export const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

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

export async function execute(
  backend: Backend,
  req: IncomingMessage,
  responseHeaders: Record<string, string>,
  /** Told the statements' texts once the body is read (fault plans pick requests by what they run). */
  onQueries?: (queries: string[]) => void,
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
  onQueries?.("query" in payload ? [payload.query] : payload.queries.map((q) => q.query));
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

export function errorBody(err: unknown): [number, Record<string, unknown>] {
  if (err instanceof HttpError) return [err.status, { message: err.message }];
  if (err instanceof pg.DatabaseError) {
    const body: Record<string, unknown> = { message: err.message };
    for (const field of PG_ERROR_FIELDS) body[field] = err[field] ?? null;
    return [400, body];
  }
  return [500, { message: err instanceof Error ? err.message : String(err) }];
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
