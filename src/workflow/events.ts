import { jsonProblem } from "../core/json.js";
import { InvalidInput } from "../core/errors.js";
import { inTimestampRange, NameSchema, parseOrThrow } from "../core/validate.js";
import { queryJson, type BatchItem, type Db } from "../db/query.js";
import { sendEventStatement, type SentEvent } from "../sql/enqueue/send-event.js";
import { timestamp } from "../sql/time.js";

/** Options of `sendEvent`. @example await sendEvent(db, "order.shipped", { orderId: 7 }, { now: clock() }); */
export interface SendEventOptions {
  /** The moment of sending (tests pass their clock). Default: the database's `now()`. */
  now?: Date;
}

/**
 * Delivers an event to every workflow waiting for it (`step.waitForEvent`) whose match its payload contains,
 * and makes those runs due now, in one statement: pass a transaction and it commits or rolls back with
 * the app's writes. A wait sees only events sent after it began; an event no step waits for is not kept.
 * @example await db.transaction(async (tx) => { await tx.insert(shipments).values(s); await sendEvent(tx, "order.shipped", { orderId: 7 }); });
 */
export async function sendEvent(db: Db, name: string, payload: unknown, options: SendEventOptions = {}): Promise<SentEvent> {
  const answer = await queryJson<SentEvent>(db, statementOf(name, payload, options));
  return { delivered: Number(answer.delivered), woken: Number(answer.woken) };
}

/**
 * The same statement as a query for `db.batch([...])` on neon-http (or `runAtomically`).
 * @example await neonDb.batch([neonDb.insert(orders).values(o), sendEventQuery(neonDb, "order.paid", { orderId: 7 })]);
 */
export function sendEventQuery(db: Db, name: string, payload: unknown, options: SendEventOptions = {}): BatchItem {
  return db.execute(statementOf(name, payload, options));
}

function statementOf(name: string, payload: unknown, options: SendEventOptions) {
  parseOrThrow(NameSchema, name, "event name");
  const problem = payload === undefined ? null : jsonProblem(payload, "payload");
  if (problem !== null) throw new InvalidInput(`Invalid event: the payload must be JSON that Postgres can store; ${problem}`);
  if (options.now !== undefined && (!(options.now instanceof Date) || !inTimestampRange(options.now.getTime()))) {
    throw new InvalidInput("sendEvent: now must be a valid Date between 1970-01-01 and 9999-12-31 (UTC)");
  }
  return sendEventStatement(name, payload ?? null, timestamp(options.now ?? null));
}
