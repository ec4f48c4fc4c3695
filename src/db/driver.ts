import { entityKind, type SQL } from "drizzle-orm";
import type { BatchItem as DrizzleBatchItem } from "drizzle-orm/batch";
import type { PgDatabase } from "drizzle-orm/pg-core";

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

/** Runs one statement and returns its rows. */
export async function query<T = Record<string, unknown>>(db: Db, statement: SQL): Promise<T[]> {
  return rowsOf<T>(await db.execute(statement));
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
 * Like `queryJson`, but on node-postgres sent as a named prepared statement, so a statement the engine
 * sends again and again with the same text (a claim, a settle, a heartbeat) is planned once per
 * connection instead of every time. Elsewhere (neon-http, neon-serverless, PGlite, transactions) it is
 * `queryJson`.
 */
export async function queryJsonPrepared<T>(db: Db, statement: SQL): Promise<T> {
  const client = preparingClient(db);
  if (!client) return queryJson<T>(db, statement);
  const { sql: text, params } = (db as any).dialect.sqlToQuery(statement) as { sql: string; params: unknown[] };
  const result = await client.query({ name: statementName(text), text, values: params });
  return result.rows[0]?.r as T;
}

/** The node-postgres pool behind a drizzle database (not a transaction), or undefined. */
function preparingClient(db: Db): { query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: { r: unknown }[] }> } | undefined {
  if (kindOf(db) !== "NodePgDatabase") return undefined;
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
 * Runs statements as one transaction: `db.batch` on neon-http (one request), `db.transaction` elsewhere.
 * Returns each statement's rows.
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
