import { entityKind, type SQL } from "drizzle-orm";
import type { BatchItem as DrizzleBatchItem } from "drizzle-orm/batch";
import type { PgDatabase } from "drizzle-orm/pg-core";
import { AkadzeError } from "../core/errors.js";
import { causeChain } from "../core/error-causes.js";
import { RenderCache, type Rendered } from "./render.js";

/** Any drizzle Postgres database or transaction: node-postgres, neon-serverless, neon-http, pglite. @example const db: Db = drizzle(pool); */
export type Db = PgDatabase<any, any, any>;

/**
 * A query drizzle can run alone (`await q`) or inside `db.batch([...])` on neon-http: `db.execute`,
 * insert, update, delete, select. @example const q: BatchItem = sendMail.using(db).enqueueQuery({ userId: 7 });
 */
export type BatchItem = DrizzleBatchItem<"pg"> & PromiseLike<unknown>;

function kindOf(db: Db): string {
  return String((db as any)?.constructor?.[entityKind] ?? "");
}

const DRIVER_NAMES: Record<string, string> = {
  NodePgDatabase: "node-postgres", NeonHttpDatabase: "neon-http", NeonDatabase: "neon-serverless", NeonServerlessDatabase: "neon-serverless", PgliteDatabase: "pglite",
};

/** The driver's name as the docs spell it (`neon-http`), for log lines; drizzle's own class name for others. */
export function driverName(db: Db): string {
  const kind = kindOf(db).replace(/Transaction$/, "Database");
  return DRIVER_NAMES[kind] ?? (kind || "unknown driver");
}

/** neon-http sends each statement alone: no interactive transactions, `db.batch` instead. */
export function isNeonHttp(db: Db): boolean {
  const kind = kindOf(db);
  return kind === "NeonHttpDatabase" || kind === "NeonHttpTransaction";
}

/** True for a drizzle transaction object (statements run inside the caller's transaction). */
export function isTransaction(db: Db): boolean {
  return kindOf(db).endsWith("Transaction");
}

/** Rows of a raw statement, whatever the driver's result shape. */
export function rowsOf<T = Record<string, unknown>>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] })?.rows ?? []) as T[];
}

/** The sentence for a database akadze's migrations never ran on (the CLI prints it as is). */
export const MIGRATE_HINT = "akadze's tables are missing in this database: run `akadze migrate` first";

/**
 * True when `error` (or an error it wraps: drizzle wraps the driver's) is Postgres saying an akadze relation
 * or the akadze schema does not exist (SQLSTATE 42P01 / 3F000).
 */
export function isMissingSchema(error: unknown): boolean {
  return causeChain(error).some((e) => (e.code === "42P01" || e.code === "3F000") && /akadze/.test(String(e.message)));
}

/** Runs one statement and returns its rows; a database that was never migrated gets MIGRATE_HINT. */
export async function query<T = Record<string, unknown>>(db: Db, statement: SQL): Promise<T[]> {
  return rowsOf<T>(await withMigrateHint(db.execute(statement)));
}

/** The statement's answer; if it failed because akadze's tables are missing, an AkadzeError saying to migrate. */
async function withMigrateHint<T>(sent: PromiseLike<T>): Promise<T> {
  try {
    return await sent;
  } catch (error) {
    if (isMissingSchema(error)) throw new AkadzeError(`${MIGRATE_HINT} (from code: \`await migrate(db)\` at deploy time)`, { cause: error });
    throw shortened(error);
  }
}

/** Error messages longer than this are cut: drizzle's "Failed query" message repeats the statement and every parameter. */
const MAX_MESSAGE_CHARS = 4_000;

/**
 * The error, or one with a short message when its own runs long (10 MB of args made a 10-million-character
 * message): the innermost cause's message (an HTTP 413, a SQLSTATE's sentence) is what tells, and the
 * original stays reachable as `cause` (codes are still found along the cause chain).
 */
function shortened(error: unknown): unknown {
  const message = (error as { message?: unknown })?.message;
  if (typeof message !== "string" || message.length <= MAX_MESSAGE_CHARS) return error;
  const chain = causeChain(error);
  const inner = [...chain].reverse().find((e) => typeof e?.message === "string" && e.message.length <= MAX_MESSAGE_CHARS)?.message;
  return new AkadzeError(`a statement failed: ${inner ?? `${message.slice(0, 500)}...`} (the statement and its parameters, ${message.length} characters, are left out of this message)`, { cause: error });
}

/**
 * Our statements return one jsonb column `r` so every driver hands back the same JS values
 * (neon-http returns timestamps as strings, pg returns bigint as strings; JSON is uniform).
 */
export async function queryJson<T>(db: Db, statement: SQL): Promise<T> {
  const rows = await query<{ r: T }>(db, statement);
  return rows[0]?.r as T;
}

/**
 * Like `queryJson`, but on a pool of sessions (node-postgres, neon-serverless's WebSocket pool) sent as a named
 * prepared statement, so a statement sent again and again with the same text (a claim, a settle, a heartbeat,
 * an enqueue) is planned once per connection instead of every time. Only for texts of a bounded set of shapes
 * (a connection keeps each one it saw). Elsewhere (neon-http, PGlite, transactions), and on a pool whose named
 * statements a pooler refused, it is `queryJson`.
 */
export async function queryJsonPrepared<T>(db: Db, statement: SQL): Promise<T> {
  const client = preparingClient(db);
  if (!client || unprepared.has(client)) return queryJson<T>(db, statement);
  const { sql: text, params } = renderCacheOf(db).query(statement);
  let result;
  try {
    result = await withMigrateHint(client.query({ name: statementName(text), text, values: params }));
  } catch (error) {
    if (!refusedPrepared(error)) throw error;
    // A pooler in transaction mode that does not track prepared statements (PgBouncer before 1.21, or with
    // max_prepared_statements 0) hands the statement to a server connection that never saw it, or that has
    // another client's of that name. Either is refused before anything runs: the pool sends its texts whole
    // from now on.
    unprepared.add(client);
    return queryJson<T>(db, statement);
  }
  return result.rows[0]?.r as T;
}

const renderCaches = new WeakMap<object, RenderCache>();

/** The render cache of `db`'s dialect (its text depends on the dialect's casing). */
function renderCacheOf(db: Db): RenderCache {
  const dialect = (db as any).dialect as { sqlToQuery(statement: SQL): Rendered };
  let cache = renderCaches.get(dialect);
  if (!cache) renderCaches.set(dialect, cache = new RenderCache((statement) => dialect.sqlToQuery(statement)));
  return cache;
}

/** Pools whose named prepared statements were refused (a pooler between them and Postgres): they send texts whole. */
const unprepared = new WeakSet<object>();

/** A named statement the server does not have (26000), or has another of the same name (42P05). */
function refusedPrepared(error: unknown): boolean {
  return causeChain(error).some((e) => e?.code === "26000" || e?.code === "42P05");
}

/** Drizzle databases over a node-postgres pool or client, or neon-serverless's (node-postgres's protocol over a WebSocket). */
const SESSION_POOLS = new Set(["NodePgDatabase", "NeonServerlessDatabase", "NeonDatabase"]);

/** The pool (or client) of sessions behind a drizzle database (not a transaction), or undefined. */
function preparingClient(db: Db): { query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: { r: unknown }[] }> } | undefined {
  if (!SESSION_POOLS.has(kindOf(db))) return undefined;
  const client = (db as any).$client;
  return client && typeof client.query === "function" && typeof client.connect === "function" ? client : undefined;
}

const names = new Map<string, string>();

/** A short stable name for a statement text (FNV-1a), cached. */
function statementName(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    let h = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) { h ^= text.charCodeAt(i); h = Math.imul(h, 0x01000193); }
    name = `akadze_${(h >>> 0).toString(16)}_${text.length}`;
    if (names.size > 1000) names.clear(); // texts vary only with a statement's shape: a handful in practice
    names.set(text, name);
  }
  return name;
}

/**
 * Runs statements as one transaction on any driver: `db.batch` on neon-http (one request), `db.transaction`
 * elsewhere, inside the caller's transaction when `db` is one. Returns each statement's rows.
 * @example
 * const [, enqueued] = await runAtomically(db, (tx) => [tx.insert(orders).values(order), sendMail.using(tx).enqueueQuery({ userId: 7 })]);
 * const [jobId] = jobIdsOf(enqueued);
 */
export async function runAtomically(db: Db, build: (db: Db) => BatchItem[]): Promise<unknown[][]> {
  if (isNeonHttp(db)) {
    const results = await (db as any).batch(build(db));
    return (results as unknown[]).map((r) => rowsOf(r));
  }
  if (isTransaction(db)) return runInOrder(build(db));
  return db.transaction(async (tx) => runInOrder(build(tx as unknown as Db)));
}

async function runInOrder(items: BatchItem[]): Promise<unknown[][]> {
  const out: unknown[][] = [];
  for (const item of items) out.push(rowsOf(await item));
  return out;
}

/**
 * The job ids an `enqueueQuery` inserted, from its result in `db.batch([...])` or `runAtomically` (raw driver
 * results differ: neon-http gives `{ rows }`, runAtomically gives rows).
 * @example const [, enqueued] = await db.batch([db.insert(orders).values(o), sendMail.using(db).enqueueQuery(args)]); const [jobId] = jobIdsOf(enqueued);
 */
export function jobIdsOf(result: unknown): number[] {
  const ids = rowsOf<{ r?: unknown }>(result)[0]?.r;
  if (!Array.isArray(ids)) throw new TypeError("jobIdsOf: expected the result of an enqueueQuery (a row with the inserted ids)");
  return ids.map(Number);
}
