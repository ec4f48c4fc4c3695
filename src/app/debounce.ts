import * as v from "valibot";
import { tryParseDuration, type Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { assertStorableJson, describeIssues, inTimestampRange, MAX_NAME_LENGTH, NameSchema, parseOrThrow } from "../core/validate.js";
import { queryJson, type BatchItem, type Db } from "../db/query.js";
import { enqueueDebouncedStatement } from "../sql/enqueue/enqueue-debounced.js";
import type { ArgsSchema, JobContext, TaskDefinition, TaskOptions } from "./task.js";
import type { Tracing } from "../core/tracing.js";

/**
 * A debounced task's options: a task's (its `args` describe one payload), plus how long enqueues coalesce.
 * @example app.debounced("search.reindex", { args: Doc, window: "5s", maxWait: "1m" }, async (docs) => reindex(docs));
 */
export interface DebouncedOptions<S extends ArgsSchema = ArgsSchema> extends TaskOptions<S> {
  /** The job runs this long after the latest enqueue under its key (a trailing debounce). */
  window: Duration;
  /** ...but no later than this long after the first one, however often more arrive. Default: no bound. */
  maxWait?: Duration;
  /**
   * Leading edge as well: an enqueue under a quiet key (none in the `window` before it) makes a job of its
   * own payload, due at once; the enqueues after it coalesce into one trailing job as above, and a burst of one
   * runs once. Default: false (trailing only).
   */
  leading?: boolean;
}

/** Where a debounced enqueue goes: its debounce key, and the limit key its job carries (see docs/flow-control.md#limits). */
export interface DebouncedEnqueueOptions {
  key: string;
  /** The limit key of the job (a leading job and a trailing one alike); a trailing job keeps the key of the enqueue that made it. */
  limitKey?: string;
}

/** A debounced task's body: every payload its job coalesced, in the order they were enqueued. */
export type DebouncedHandler<S extends ArgsSchema> = (payloads: v.InferOutput<S>[], job: JobContext) => unknown;

/** Enqueueing of a debounced task under one key, bound to a database or transaction. */
export interface DebouncedEnqueuer<S extends ArgsSchema> {
  /** Adds the payload to the key's queued job (or makes that job); resolves to the job's id. */
  enqueue(payload: v.InferInput<S>): Promise<number>;
  /** The same as a query for `db.batch([...])` (neon-http has no interactive transactions). */
  enqueueQuery(payload: v.InferInput<S>): BatchItem;
}

/** The window, bound and edge of a debounced task. */
export interface DebounceTiming { windowMs: number; maxWaitMs: number | null; leading: boolean }

/** The window, bound and edge of a debounced task, checked (InvalidInput names the option). */
export function debounceTiming(name: string, options: DebouncedOptions<any>): DebounceTiming {
  const windowMs = tryParseDuration(options?.window);
  if (windowMs === undefined || windowMs <= 0) {
    throw new InvalidInput(`debounced task ${name}: window must be a positive duration such as "5s", got ${JSON.stringify(options?.window)}`);
  }
  if (options.leading !== undefined && typeof options.leading !== "boolean") {
    throw new InvalidInput(`debounced task ${name}: leading must be true or false, got ${JSON.stringify(options.leading)}`);
  }
  const leading = options.leading ?? false;
  if (options.maxWait === undefined) return { windowMs, maxWaitMs: null, leading };
  const maxWaitMs = tryParseDuration(options.maxWait);
  if (maxWaitMs === undefined || maxWaitMs < windowMs) {
    throw new InvalidInput(`debounced task ${name}: maxWait must be a duration no shorter than the window (${windowMs} ms), got ${JSON.stringify(options.maxWait)}`);
  }
  return { windowMs, maxWaitMs, leading };
}

/**
 * A debounced task's handle: enqueues under a key within the window coalesce into one job whose handler gets
 * every payload in order.
 * @example await reindex.using(tx, { key: `doc:${id}` }).enqueue({ id });
 */
export class DebouncedTask<S extends ArgsSchema = ArgsSchema> {
  constructor(
    readonly definition: TaskDefinition,
    private readonly payload: S,
    private readonly timing: DebounceTiming,
    private readonly clock: (() => Date) | null,
    private readonly tracing: Tracing | null = null,
  ) {}

  /** The task's registered name. */
  get name(): string { return this.definition.name; }

  /**
   * Binds enqueueing to `db` (a database or a transaction), a debounce key and optionally a limit key.
   * @example await reindex.using(db, { key: "doc:7", limitKey: "search-api" }).enqueue({ id: 7 });
   */
  using(db: Db, options: DebouncedEnqueueOptions): DebouncedEnqueuer<S> {
    // A key is a name like any other (NameSchema: unique keys, limit keys, queues).
    const checked = v.safeParse(NameSchema, options?.key);
    if (!checked.success) {
      throw new InvalidInput(`debounced task ${this.name}: key must be a non-empty string of at most ${MAX_NAME_LENGTH} characters: ${describeIssues(checked.issues)}`);
    }
    const key = checked.output;
    const limit = options.limitKey === undefined ? undefined : v.safeParse(NameSchema, options.limitKey);
    if (limit !== undefined && !limit.success) {
      throw new InvalidInput(`debounced task ${this.name}: limitKey must be a non-empty string of at most ${MAX_NAME_LENGTH} characters: ${describeIssues(limit.issues)}`);
    }
    const limitKey = limit?.output ?? null;
    const limitWaitMs = limitKey === null ? null : this.definition.limitWaitMs ?? null;
    const statementFor = (payload: unknown) => {
      parseOrThrow(this.payload, payload, `payload for task ${this.name}`);
      assertStorableJson(payload ?? {}, "payload", `payload for task ${this.name}`);
      const d = this.definition;
      const now = this.clock?.() ?? null;
      // A date JS writes as "+020000-..." would reach Postgres as text it refuses.
      if (now !== null && !(now instanceof Date && inTimestampRange(now.getTime()))) {
        throw new InvalidInput(`debounced task ${this.name}: the app's clock must return a date between 1970-01-01 and 9999-12-31 (UTC), got ${now instanceof Date && Number.isFinite(now.getTime()) ? now.toISOString() : String(now)}`);
      }
      return enqueueDebouncedStatement({ task: d.name, queue: d.queue, priority: d.priority, maxAttempts: d.maxAttempts, key, ...this.timing, limitKey, limitWaitMs, now,
        traceContext: this.tracing?.capture() ?? null }, payload ?? {});
    };
    return {
      enqueue: async (payload) => Number(await queryJson<number>(db, statementFor(payload))),
      enqueueQuery: (payload) => db.execute(statementFor(payload)),
    };
  }
}
