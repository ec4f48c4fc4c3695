import { InvalidInput } from "../core/errors.js";
import { jsonProblem } from "../core/json.js";
import { inTimestampRange, NameSchema, parseOrThrow } from "../core/validate.js";
import { queryJson, type BatchItem, type Db } from "../db/query.js";
import { sendEventStatement, type SentEvent } from "../sql/enqueue/send-event.js";
import { timestamp } from "../sql/time.js";
import type { TaskDefinition } from "./task.js";

/** Options of `app.sendEvent`. @example await app.sendEvent(tx, "order.paid", { orderId: 7 }, { id: `order-paid-7` }); */
export interface AppEventOptions {
  /**
   * The event's id, unique per event name (an idempotency key such as `order-paid-7`): a send of an id already
   * sent does nothing, so a retried request starts no subscriber twice. Default: a new random id.
   */
  id?: string;
  /** The moment of sending. Default: the app's clock, else the database's `now()`. */
  now?: Date;
}

/** What `app.sendEvent` did. */
export interface SentAppEvent extends SentEvent {
  /** The event's id (the one given, or the one made). */
  id: string;
  /** The id had been sent before (within the history's retention): nothing was done this time. */
  repeated: boolean;
  /** The job each subscribed task got, in the order of the subscriptions. */
  started: { task: string; id: number }[];
}

/** The tasks subscribed to each event name, in the order `app.on` added them. */
export class Subscriptions {
  private readonly byEvent = new Map<string, TaskDefinition[]>();

  add(event: string, task: TaskDefinition): void {
    parseOrThrow(NameSchema, event, "event name");
    const list = this.byEvent.get(event) ?? [];
    if (list.some((t) => t.name === task.name)) throw new InvalidInput(`task ${task.name} is already subscribed to event ${JSON.stringify(event)}`);
    this.byEvent.set(event, [...list, task]);
  }

  /** The task names subscribed to `event`. */
  tasksOf(event: string): string[] {
    return (this.byEvent.get(event) ?? []).map((t) => t.name);
  }

  /**
   * The statement of one send: checks the name, the id, the clock and the payload against every subscriber's
   * schema (InvalidInput naming the task, before anything is written).
   */
  statement(name: string, payload: unknown, options: AppEventOptions | undefined, clock: (() => Date) | null): { id: string; statement: ReturnType<typeof sendEventStatement> } {
    parseOrThrow(NameSchema, name, "event name");
    if (options !== undefined && (options === null || typeof options !== "object")) throw new InvalidInput("sendEvent: options must be an object such as { id }");
    const id = options?.id === undefined ? crypto.randomUUID() : parseOrThrow(NameSchema, options.id, `id of event ${name}`);
    const problem = payload === undefined ? null : jsonProblem(payload, "payload");
    if (problem !== null) throw new InvalidInput(`Invalid event: the payload must be JSON that Postgres can store; ${problem}`);
    const now = options?.now ?? clock?.() ?? null;
    if (now !== null && (!(now instanceof Date) || !inTimestampRange(now.getTime()))) {
      throw new InvalidInput("sendEvent: now (or the app's clock) must be a valid Date between 1970-01-01 and 9999-12-31 (UTC)");
    }
    const subscribers = this.byEvent.get(name) ?? [];
    for (const task of subscribers) parseOrThrow(task.schema, payload ?? {}, `payload of event ${name} for its subscriber ${task.name}`);
    const statement = sendEventStatement(name, payload ?? null, timestamp(now), {
      id, subscribers: subscribers.map((t) => ({ task: t.name, queue: t.queue, priority: t.priority, maxAttempts: t.maxAttempts })),
    });
    return { id, statement };
  }
}

/** Runs one send (see `App.sendEvent`). */
export async function sendAppEvent(db: Db, subscriptions: Subscriptions, clock: (() => Date) | null, name: string, payload: unknown,
  options?: AppEventOptions): Promise<SentAppEvent> {
  const { id, statement } = subscriptions.statement(name, payload, options, clock);
  const r = await queryJson<{ repeated: boolean; delivered: number; woken: number; started: { task: string; id: number }[] }>(db, statement);
  return {
    id, repeated: r.repeated, delivered: Number(r.delivered), woken: Number(r.woken),
    started: r.started.map((s) => ({ task: s.task, id: Number(s.id) })),
  };
}

/** The same send as a query for `db.batch([...])`. */
export function sendAppEventQuery(db: Db, subscriptions: Subscriptions, clock: (() => Date) | null, name: string, payload: unknown,
  options?: AppEventOptions): BatchItem {
  return db.execute(subscriptions.statement(name, payload, options, clock).statement);
}
