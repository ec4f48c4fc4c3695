import { parseDuration } from "../core/duration.js";
import { inTimestampRange, parseOrThrow, RunOptionsSchema } from "../core/validate.js";
import { InvalidInput } from "../core/errors.js";
import type { App } from "../app/app.js";
import { resolveRetention } from "../core/retention.js";
import { invocationDoneCte, invocationEndedStatement } from "../sql/registry/mark-invocation-done.js";
import { timestamp } from "../sql/time.js";
import { claimRiders, invocationRetention } from "./riders.js";
import { Engine } from "./engine.js";
import { invocationPolicy } from "./claim-policy.js";
import { CLAIM_MARGIN_MS } from "../core/claim-margin.js";
import { ensureSchema } from "../db/schema-check.js";
import { driverName } from "../db/query.js";
import { HistoryKeeper } from "./history.js";
import { FanOutSession } from "./fan-out.js";
import { BudgetClock } from "./budget-clock.js";
import { Summary } from "./summary.js";
import type { EngineTrace } from "../core/tracing.js";
import { DEFAULT_BATCH_SIZE, DEFAULT_BUDGET, DEFAULT_LEASE, DEFAULT_SLOTS, type RunOnceOptions, type RunSummary } from "./run-options.js";

export * from "./run-options.js";

/** How often an invocation's settles update its registry row while it works (its last settle always does). */
const REGISTRY_EVERY_MS = 1000;

/**
 * One serverless invocation: recover expired leases and claim a batch in one statement, run it with `slots`
 * concurrency, claim the next batch before the slots run dry, and complete in bulk, until the budget is
 * spent or nothing claimable is left; then return a summary. `drain: false` runs exactly one batch.
 * @example const summary = await runOnce(app, { db, queues: ["mail"], slots: 8, batchSize: 50, budget: "25s" });
 */
export async function runOnce(app: App, options: RunOnceOptions): Promise<RunSummary> {
  if (!app?.tracing) return invoke(app, options, null);
  // Traced: the invocation is a span (linked to the one that started it by fan-out), ended with its summary.
  const id = options?.id ?? `inv-${crypto.randomUUID()}`;
  const trace = app.tracing.engine({
    id, kind: "invocation", queues: Array.isArray(options?.queues) ? options.queues : null, startedBy: options?.fanOut?.ticket?.trace ?? null,
  });
  try {
    // An invocation whose span is not recorded (no SDK, or sampled out) runs as an untraced one.
    const summary = await invoke(app, { ...options, id }, trace.recording ? trace : null);
    trace.end(countsOf(summary));
    return summary;
  } catch (error) {
    trace.end(null, error);
    throw error;
  }
}

/** What an invocation's span records of its summary. */
function countsOf(s: RunSummary): Record<string, number> {
  return { claimed: s.claimed, succeeded: s.succeeded, failed: s.failed, retried: s.retried, snoozed: s.snoozed, cancelled: s.cancelled, released: s.released, roundTrips: s.roundTrips };
}

async function invoke(app: App, options: RunOnceOptions, trace: EngineTrace | null): Promise<RunSummary> {
  const o = resolveRunOptions(options);
  // A schema akadze cannot work with is refused before any job runs (one statement, once per client).
  await ensureSchema(options.db);
  const now = checkedClock(options.now ?? app.clock, "runOnce");
  const sqlClock = options.now ?? app.sqlClock;
  const id = options.id ?? `inv-${crypto.randomUUID()}`;
  const retention = resolveRetention(options.retention);
  const register = options.register !== false;
  const startedAt = now();
  const queues = options.queues ?? null;
  /** When a settle last carried the registry update (performance.now()), or null. */
  let reportedAt: number | null = null;
  const sqlNow = () => timestamp(sqlClock?.() ?? null);
  const history = retention ? new HistoryKeeper({ app, db: options.db, plan: retention, sqlNow, callerClock: sqlClock !== null }) : undefined;
  const monotonic = options.now === undefined && app.sqlClock === null;
  // One budget clock for the invocation, which the engine and fan-out read: monotonic for the real clock, else the caller's.
  const budget = new BudgetClock(now, monotonic, o.budgetMs);
  const fan = options.fanOut ? new FanOutSession(options.fanOut, {
    app, db: options.db, id, queues, slots: o.slots, batchSize: o.batchSize, budgetMs: o.budgetMs, leaseMs: o.leaseMs, sqlNow,
    budget, signal: options.signal, trace: trace?.carrier() ?? null,
  }) : null;
  // A fan-out invocation claims only while it holds a slot: the cap is counted in slots.
  if (fan && !(await fan.enter())) {
    const refused = new Summary(id);
    refused.fannedOut(fan.report, 1); // the one statement that found no slot
    return { ...refused.take(), driver: driverName(options.db) };
  }
  const drain = options.drain !== false;
  // Until its jobs' pace is known, claim only what starts (claim-policy.ts): where a second claim can follow and no
  // batch task fills its batches from held jobs.
  const startsFirst = drain && o.budgetMs >= 2 * CLAIM_MARGIN_MS && ![...app.tasks.values()].some((t) => t.batch);
  const engine: Engine = new Engine({
    app, db: options.db, id, queues, slots: o.slots, leaseMs: o.leaseMs, heartbeatMs: o.heartbeatMs,
    now, sqlNow, budget, signal: options.signal,
    policy: invocationPolicy({ batchSize: o.batchSize, drain, startsFirst }), keepSucceeded: retention ? retention.keepSucceeded : true,
    // Retention rides along with the first claim (no extra round trip), the registry row with the claims until one took a job.
    riders: claimRiders({
      app, db: options.db, now, history,
      retention: retention ? invocationRetention(app, retention, sqlClock !== null) : undefined,
      registry: register ? { id, queues, startedAt } : undefined,
      backlog: fan ? (first, size) => fan.backlogBound(first, size) : undefined,
    }),
    onClaim: (claim, asked) => { fan?.claimed(claim, asked); },
    // The registry is updated by the first settle, then at most every REGISTRY_EVERY_MS, and by any that may be the last.
    settleAfter: (unreported, othersHeld) => {
      if (!register || (othersHeld && reportedAt !== null && performance.now() - reportedAt < REGISTRY_EVERY_MS)) return [];
      reportedAt = performance.now();
      return [invocationDoneCte(id, now(), unreported, othersHeld)];
    },
    // Jobs completed on their own with no settle after them (a completeBatch chain) are counted at the end.
    reportUncounted: (uncounted) => register ? invocationEndedStatement(id, now(), uncounted) : null,
    trace,
  });
  const driver = driverName(options.db);
  if (!fan) return { ...(await engine.run()).take(), driver };
  let summary;
  try {
    summary = await engine.run();
  } catch (error) {
    await fan.finish(new Summary(id), false);
    throw error;
  }
  await fan.finish(summary, options.signal?.aborted !== true && budget.remainingMs() <= 0);
  return { ...summary.take(), driver };
}

/**
 * The clock, after one reading proved it gives valid Dates akadze can store (InvalidInput otherwise: a clock
 * returning a string, an invalid date or one past year 9999, which JS writes as "+020000-..." and Postgres
 * refuses, would fail deep inside a statement with a raw RangeError or database error). Every later reading
 * is checked as well.
 */
export function checkedClock(clock: () => Date, what: string): () => Date {
  const read = (): Date => {
    let at: unknown;
    try { at = clock(); } catch (error) { throw new InvalidInput(`${what}: the clock (\`now\`) threw: ${(error as Error)?.message ?? error}`, { cause: error }); }
    if (!(at instanceof Date) || !Number.isFinite(at.getTime())) {
      throw new InvalidInput(`${what}: the clock (\`now\`) must return a valid Date, got ${at instanceof Date ? "an invalid Date" : JSON.stringify(at) ?? String(at)}`);
    }
    if (!inTimestampRange(at.getTime())) {
      throw new InvalidInput(`${what}: the clock (\`now\`) must return a date between 1970-01-01 and 9999-12-31 (UTC), got ${at.toISOString()}`);
    }
    return at;
  };
  read();
  return read;
}

/**
 * The numbers of an invocation with defaults applied, after RunOptionsSchema validated them (InvalidInput
 * naming the field: `slots: NaN`, `lease: "0ms"` never reach the database).
 */
export function resolveRunOptions(options: RunOnceOptions): { slots: number; batchSize: number; budgetMs: number; leaseMs: number; heartbeatMs: number } {
  parseOrThrow(RunOptionsSchema, options, "runOnce options");
  const budgetMs = options.budget === Infinity ? Infinity : parseDuration(options.budget ?? DEFAULT_BUDGET, "budget");
  const leaseMs = parseDuration(options.lease ?? DEFAULT_LEASE, "lease");
  const heartbeatMs = options.heartbeat === undefined ? leaseMs / 3 : parseDuration(options.heartbeat, "heartbeat");
  if (heartbeatMs >= leaseMs) {
    throw new InvalidInput(`runOnce options: heartbeat (${heartbeatMs} ms) must be shorter than the lease (${leaseMs} ms), or every lease expires before it is renewed`);
  }
  return { slots: options.slots ?? DEFAULT_SLOTS, batchSize: options.batchSize ?? DEFAULT_BATCH_SIZE, budgetMs, leaseMs, heartbeatMs };
}
