import { CLAIM_MARK } from "../../src/sql/claim/claim.js";

/** A statement as the driver sent it: its text and its values. */
export interface SentStatement { text: string; values: unknown[] }

/**
 * What a node-postgres `query(...)` call sends, read from its arguments (a text, a config object, or a text
 * and its values), so a test's pool or client can pick out the engine's statements by their text.
 * @example const { text, values } = sentStatement(args); if (isClaim(text)) ...
 */
export function sentStatement(args: any[]): SentStatement {
  const config = args[0];
  const text: string = typeof config === "string" ? config : config?.text ?? "";
  const values: unknown[] = (Array.isArray(args[1]) ? args[1] : config?.values) ?? [];
  return { text, values };
}

/** The claim statement (its lease of the batch, `CLAIM_MARK`, as the bench's statement counter tells it). */
export const isClaim = (text: string): boolean => text.includes(CLAIM_MARK);

/** The settle statement (outcomes recorded, prefetched jobs started). */
export const isSettle = (text: string): boolean => text.includes("settle_locked");

/** A settle statement that asks to start job `id` alone (a prefetched job's start request). */
export const asksToStart = (statement: SentStatement, id: number): boolean =>
  isSettle(statement.text) && statement.text.includes("start_req") && statement.values.includes(JSON.stringify([id]));

/** The heartbeat statement (the owner's lease renewed, the named jobs read). */
export const isHeartbeat = (text: string): boolean => text.includes("hb_named as (");

/**
 * The statements `run` sends through `pool` whose text `pick` accepts, in order, as text and values (to
 * EXPLAIN them afterwards): the pool's `query` is wrapped while `run` runs.
 * @example const [claim] = await statementsSent(t.pool, isClaim, () => runOnce(app, { db: t.db }));
 */
export async function statementsSent(pool: object, pick: (text: string) => boolean, run: () => Promise<unknown>): Promise<SentStatement[]> {
  const sent: SentStatement[] = [];
  const target = pool as { query: (...args: any[]) => unknown };
  const send = target.query.bind(target);
  target.query = (...args: any[]) => {
    const statement = sentStatement(args);
    if (pick(statement.text)) sent.push(statement);
    return send(...args);
  };
  try { await run(); } finally { target.query = send; }
  return sent;
}
