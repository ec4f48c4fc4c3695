import * as v from "valibot";
import { parseDuration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import type { App } from "../app/app.js";
import { resolveRetention, retentionCtes } from "../ops/retention.js";
import { invocationDoneCte, invocationSeenCte } from "../ops/workers.js";
import { timestamp } from "../sql/time.js";
import { Engine } from "./engine.js";
import { DEFAULT_BATCH_SIZE, DEFAULT_BUDGET, DEFAULT_LEASE, DEFAULT_SLOTS, type RunOnceOptions, type RunSummary } from "./run-options.js";

export * from "./run-options.js";

/**
 * One serverless invocation: recover expired leases and claim a batch in one statement, run it with `slots`
 * concurrency, claim the next batch before the slots run dry, and complete in bulk, until the budget is
 * spent or nothing claimable is left; then return a summary. `drain: false` runs exactly one batch.
 * @example const summary = await runOnce(app, { db, queues: ["mail"], slots: 8, batchSize: 50, budget: "25s" });
 */
export async function runOnce(app: App, options: RunOnceOptions): Promise<RunSummary> {
  const o = resolveRunOptions(options);
  const now = options.now ?? app.clock;
  const sqlClock = options.now ?? app.sqlClock;
  const id = options.id ?? `inv-${crypto.randomUUID()}`;
  const retention = resolveRetention(options.retention);
  const register = options.register !== false;
  const startedAt = now();
  const queues = options.queues ?? null;
  const engine = new Engine({
    app, db: options.db, owner: id, queues, slots: o.slots, batchSize: o.batchSize, leaseMs: o.leaseMs, heartbeatMs: o.heartbeatMs,
    now, sqlNow: () => timestamp(sqlClock?.() ?? null), deadline: startedAt.getTime() + o.budgetMs, signal: options.signal,
    drain: options.drain !== false,
    // Registry and retention ride along with the first claim: no extra round trip.
    firstClaimExtras: [
      ...(register ? [invocationSeenCte(id, queues, startedAt)] : []),
      ...(retention ? retentionCtes(retention, startedAt) : []),
    ],
    settleAfter: (alone) => (register ? [invocationDoneCte(id, now(), alone)] : []),
  });
  return engine.run();
}

const positiveInteger = (name: string) => v.pipe(v.number(`${name} must be a number`), v.integer(`${name} must be a whole number`),
  v.minValue(1, `${name} must be at least 1`), v.maxValue(10_000, `${name} must be at most 10000`));

const RunNumbersSchema = v.object({ slots: v.optional(positiveInteger("slots")), batchSize: v.optional(positiveInteger("batchSize")) });

/** The numbers of an invocation, validated, with defaults applied. Throws InvalidInput naming the field. */
export function resolveRunOptions(options: RunOnceOptions): { slots: number; batchSize: number; budgetMs: number; leaseMs: number; heartbeatMs: number } {
  const numbers = v.safeParse(RunNumbersSchema, { slots: options.slots, batchSize: options.batchSize });
  if (!numbers.success) throw new InvalidInput(`Invalid runOnce options: ${numbers.issues.map((i) => i.message).join("; ")}`);
  const budgetMs = options.budget === Infinity ? Infinity : parseDuration(options.budget ?? DEFAULT_BUDGET, "budget");
  const leaseMs = parseDuration(options.lease ?? DEFAULT_LEASE, "lease");
  if (leaseMs < 1000) throw new InvalidInput(`Invalid runOnce options: lease must be at least 1s (got ${leaseMs} ms)`);
  const heartbeatMs = options.heartbeat === undefined ? leaseMs / 3 : parseDuration(options.heartbeat, "heartbeat");
  if (!(heartbeatMs >= 10)) throw new InvalidInput(`Invalid runOnce options: heartbeat must be at least 10ms (got ${heartbeatMs} ms)`);
  return { slots: numbers.output.slots ?? DEFAULT_SLOTS, batchSize: numbers.output.batchSize ?? DEFAULT_BATCH_SIZE, budgetMs, leaseMs, heartbeatMs };
}
