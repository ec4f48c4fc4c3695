import { sql, type SQL } from "drizzle-orm";
import { queryJsonPrepared, rowsOf, type Db } from "../db/query.js";
import { traitsOf } from "../db/traits.js";
import { withTimeout } from "./signal.js";

/**
 * Over HTTP Postgres (neon-http) no statement is waited for longer than this, nor past the budget's end
 * (but at least MIN_REQUEST_TIMEOUT_MS, so the last settle gets its round trip): a response that never
 * comes does not keep an invocation past its budget.
 */
export const REQUEST_TIMEOUT_MS = 10_000;
/** See REQUEST_TIMEOUT_MS. */
export const MIN_REQUEST_TIMEOUT_MS = 1_000;

/** How much longer than the server's statement timeout the client waits for the answer (the network's share). */
const ANSWER_GRACE_MS = 500;

/**
 * `queryJsonPrepared` with a timeout of `ms` (Infinity: none). Over neon-http the statement goes in one
 * request together with a `statement_timeout` for its transaction, so the server ends it (rolled back) when
 * the caller stops waiting, and a late answer cannot have committed what the caller already gave up on;
 * the caller waits `ms` plus a little for the answer. Elsewhere it is `queryJsonPrepared`.
 */
export async function queryJsonWithin<T>(db: Db, statement: SQL, ms: number, what: string): Promise<T> {
  if (!Number.isFinite(ms) || !traitsOf(db).http) return queryJsonPrepared<T>(db, statement);
  const timeout = sql`select set_config('statement_timeout', ${String(Math.max(1, Math.ceil(ms)))}, true)`;
  const results = await withTimeout((db as any).batch([db.execute(timeout), db.execute(statement)]) as Promise<unknown[]>, ms + ANSWER_GRACE_MS, what);
  return rowsOf<{ r: T }>(results[1])[0]?.r as T;
}

/**
 * How long a statement's answer is waited for with `remainingMs` of budget left: over HTTP Postgres at most
 * REQUEST_TIMEOUT_MS and not past the budget (but MIN_REQUEST_TIMEOUT_MS at least); over a session, as long
 * as it takes (a session's statements are bounded by the server's own timeouts, and one abandoned would keep
 * its connection busy).
 */
export function requestTimeoutMs(db: Db, remainingMs: number): number {
  if (!traitsOf(db).http) return Infinity;
  return Math.min(REQUEST_TIMEOUT_MS, Math.max(MIN_REQUEST_TIMEOUT_MS, remainingMs));
}
