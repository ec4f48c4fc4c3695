import { queryJsonWithin } from "./timed-query.js";
import type { SQL } from "drizzle-orm";
import type { App } from "../app/app.js";
import type { Transition } from "../app/hooks.js";
import { query, queryJsonPrepared, type Db } from "../db/query.js";
import { traitsOf } from "../db/traits.js";
import { analyzeJobsStatement, statisticsStale, vacuumDue, vacuumJobsStatement } from "../sql/analyze.js";
import { claimJobsStatement, claimResultOf, type ClaimAnswer, type ClaimResult } from "../sql/claim.js";
import { ScheduleSlots } from "../schedules/enqueue.js";
import { transitionOf } from "../app/hooks.js";
import { sendWithTransitions } from "./send.js";
import { CLAIM_MARGIN_MS } from "./run-options.js";
import type { HistoryKeeper } from "./history.js";
import type { EngineTrace } from "../core/tracing.js";

/** The least room a claim leaves for its own round trip once round trips were measured. */
const MIN_MARGIN_MS = 50;

export interface ClaimerOptions {
  app: App;
  db: Db;
  owner: string;
  leaseMs: number;
  queues: string[] | null;
  /** The statement clock: a caller's clock, or the database's `now()`. */
  sqlNow: () => SQL;
  /** The local clock, for the budget (and a first guess of the database's clock for schedules). */
  now: () => Date;
  remainingMs: () => number;
  /** The invocation's average round trip so far (`null` before the first). */
  roundTripMs: () => number | null;
  /** Told once per statement sent. */
  count: () => void;
  /** How long to wait for a statement's answer now (Infinity: as long as it takes). */
  requestTimeoutMs: () => number;
  /** The history's retention, checked in claims and maintained beside them (none: `retention: false`). */
  history?: HistoryKeeper;
  /** How far a claim of `batchSize` also counts the due jobs (`Claim.backlog`), given whether it is the first; undefined: not at all. */
  backlog?: (first: boolean, batchSize: number) => number | undefined;
  /** CTEs for each claim that read its `claimed` CTE (ClaimParams.afterClaim): runOnce's registry row. */
  afterClaim?: () => SQL[];
  /** Each claim statement is a span, and claimed jobs come with their trace context; null or absent: untraced. */
  trace?: EngineTrace | null;
}

/** A claim's result, plus whether it could not even be sent because no task fits the remaining budget. */
export interface Claim extends ClaimResult { noTaskFits: boolean }

/**
 * What a process learned about the database from its last claims, shared by the invocations of one app:
 * whether any limit exists (a claim without the limit CTEs never takes a limited job, so a stale `false`
 * only leaves limited jobs for the next claim, which reports the truth), whether any queued job has a
 * fairness key (kept for FAIR_HINT_MS after the last claim that saw one: a stale answer only orders one claim
 * plainly or walks no key), and when it last let a claim carry
 * retention and last started an ANALYZE of the jobs table.
 */
interface ProcessHints { limits: boolean; fair: boolean; fairSeenAt: number; fairSubKeys: boolean; fairSubKeysSeenAt: number; prunedAt: number; analyzedAt: number; vacuumedAt: number }
const hints = new WeakMap<App, ProcessHints>();

function hintsOf(app: App): ProcessHints {
  let h = hints.get(app);
  if (!h) hints.set(app, (h = { limits: true, fair: true, fairSeenAt: -Infinity, fairSubKeys: false, fairSubKeysSeenAt: -Infinity, prunedAt: -Infinity, analyzedAt: -Infinity, vacuumedAt: -Infinity }));
  return h;
}

/** Whether `app`'s `at` hint is at least `everyMs` old (on the real clock); if so it is moved to now. */
function dueEvery(app: App, at: "prunedAt" | "analyzedAt" | "vacuumedAt", everyMs: number): boolean {
  const h = hintsOf(app);
  if (Date.now() - h[at] < everyMs) return false;
  h[at] = Date.now();
  return true;
}

/** How long after its last claim that saw a job with a fairness key a process still walks the keys. */
const FAIR_HINT_MS = 60_000;
/** How often one process lets an invocation's first claim carry retention. */
export const RETENTION_EVERY_MS = 10_000;
/** How often one process may start an ANALYZE of the jobs table: a role that may not analyze (Postgres skips it with a warning) then adds no statement to every full claim. */
const ANALYZE_EVERY_MS = 60_000;
/** How often one process may ask whether the queue table needs a vacuum, and start one. */
const VACUUM_EVERY_MS = 5_000;

/**
 * Claims batches for one invocation: picks the tasks whose timeout fits the remaining budget, carries the
 * schedules that came due (each slot once per process), extra CTEs on request, the limit CTEs only while
 * some limit exists (each claim reports whether one does), and starts an ANALYZE when a claim reports the
 * planner's statistics stale.
 */
export class Claimer {
  /** Whether this claim should carry retention: at most once per RETENTION_EVERY_MS per app in this process. */
  static pruneDue(app: App): boolean {
    return dueEvery(app, "prunedAt", RETENTION_EVERY_MS);
  }
  private readonly schedules: ScheduleSlots;
  /** The ANALYZE this claimer started, if any: the invocation waits for it before it returns. */
  private analysis: Promise<void> = Promise.resolve();
  /** Tasks not claimed because their timeout did not fit the budget, as of the first claim. */
  tooLongForBudget: string[] | null = null;
  private claimedOnce = false;

  constructor(private readonly o: ClaimerOptions) {
    this.schedules = new ScheduleSlots(o.app);
  }

  /**
   * The task names worth claiming now: a declared timeout must fit the remaining budget with room for the
   * claim's own round trip (CLAIM_MARGIN_MS until one was measured, then a few round trips); a task without
   * one runs on what is left of the budget, so it needs CLAIM_MARGIN_MS of it.
   */
  fittingTasks(): { fit: string[]; tooLong: string[] } {
    const remaining = this.o.remainingMs();
    const rtt = this.o.roundTripMs();
    const margin = rtt === null ? CLAIM_MARGIN_MS : Math.min(CLAIM_MARGIN_MS, Math.max(MIN_MARGIN_MS, 4 * rtt));
    const fit: string[] = [];
    const tooLong: string[] = [];
    for (const t of this.o.app.tasks.values()) {
      const fits = t.timeoutMs === undefined ? remaining >= CLAIM_MARGIN_MS : t.timeoutMs <= remaining - margin;
      (fits ? fit : tooLong).push(t.name);
    }
    return { fit, tooLong };
  }

  async claim(batchSize: number, startCount: number, extra: SQL[] = []): Promise<Claim> {
    const { fit, tooLong } = this.fittingTasks();
    this.tooLongForBudget ??= tooLong;
    if (fit.length === 0) {
      return { claimed: [], recovered: [], cancelled: [], rateLimited: [], tooLarge: [], more: false, limits: hintsOf(this.o.app).limits, fair: hintsOf(this.o.app).fair, noTaskFits: true };
    }
    const schedules = this.schedules.forClaim(this.o.now(), this.o.sqlNow());
    const withLimits = hintsOf(this.o.app).limits;
    const statement = claimJobsStatement({
      owner: this.o.owner, now: this.o.sqlNow(), leaseMs: this.o.leaseMs, batchSize, startCount, tasks: fit,
      queues: this.o.queues, limits: withLimits, fair: hintsOf(this.o.app).fair, fairSubKeys: hintsOf(this.o.app).fairSubKeys, maxBytes: traitsOf(this.o.db).maxClaimBytes,
      extra: [...extra, ...schedules.extra], afterClaim: this.o.afterClaim?.(), backlog: this.o.backlog?.(!this.claimedOnce, batchSize), traced: !!this.o.trace,
      report: {
        ...schedules.report, stale: statisticsStale(batchSize), ...this.o.history?.report(),
        ...(dueEvery(this.o.app, "vacuumedAt", VACUUM_EVERY_MS) ? { vacuum: vacuumDue() } : {}),
      },
    });
    this.claimedOnce = true;
    this.o.count();
    const traced = this.o.trace?.claim(batchSize);
    let result: ClaimResult;
    try {
      result = await sendWithTransitions(this.o.db, this.o.app.hooks, async (db) => claimResultOf(await queryJsonWithin<ClaimAnswer>(db, statement, this.o.requestTimeoutMs(), "a claim"), !!traced), (r) => [
        ...r.recovered.map((t) => transitionOf(t)), ...r.cancelled.map((t) => transitionOf(t)), ...r.rateLimited.map((t) => transitionOf(t)), ...r.tooLarge.map((t) => transitionOf(t)),
        ...r.claimed.map((j): Transition => ({ jobId: j.id, task: j.task, queue: j.queue, from: "queued", to: "running", attempt: j.attempt })),
      ], this.o.remainingMs);
    } catch (error) {
      traced?.end(0, error);
      throw error;
    }
    traced?.end(result.claimed.length);
    const learned = schedules.answered(result.schedules, result.runtimeDue);
    hintsOf(this.o.app).limits = result.limits;
    const h = hintsOf(this.o.app);
    if (result.fair) h.fairSeenAt = Date.now();
    // Sticky for a while: a tenant's burst right after a moment without keyed jobs is still claimed fairly.
    h.fair = result.fair || Date.now() - h.fairSeenAt < FAIR_HINT_MS;
    // Sub-keys likewise, learned from a fair claim: off until one is seen, so a process whose tenants have none
    // never sends the sub-key walk (its recursive estimate alone would cost a claim JIT's compilation).
    if (result.fairSubKeys) h.fairSubKeysSeenAt = Date.now();
    if (result.fairSubKeys !== undefined) h.fairSubKeys = result.fairSubKeys || Date.now() - h.fairSubKeysSeenAt < FAIR_HINT_MS;
    if (result.vacuum) this.vacuum();
    else if (result.stale) this.analyze();
    this.o.history?.answered(result.historyDue, this.o.count);
    // Sent without the limit CTEs, it could not take a limited job; a limit exists now (the process's first
    // setLimit): the next claim, with them, may find that key's due jobs.
    // (Runtime schedules it learned have a slot due: the next claim fires it.)
    return { ...result, more: result.more || (!withLimits && result.limits) || learned, noTaskFits: false };
  }

  /** Resolves when the ANALYZE and the history maintenance this claimer started (if any) have ended. */
  async finished(): Promise<void> {
    await this.analysis;
    await this.o.history?.finished();
  }

  /** Reclaims the queue table's dead rows beside the claims (a role that may not vacuum only gets a warning from Postgres). */
  private vacuum(): void {
    this.o.count();
    const before = this.analysis;
    this.analysis = Promise.all([before, query(this.o.db, vacuumJobsStatement()).then(() => {}, () => {})]).then(() => {});
  }

  /** Refreshes the jobs table's statistics beside the claims (its failure only leaves them stale). */
  private analyze(): void {
    if (!dueEvery(this.o.app, "analyzedAt", ANALYZE_EVERY_MS)) return;
    this.o.count();
    this.analysis = query(this.o.db, analyzeJobsStatement()).then(() => {}, () => {});
  }
}

/** The longest timeout any of the app's tasks declares (-Infinity if none does). */
export function longestTimeoutMs(app: App): number {
  let longest = -Infinity;
  for (const task of app.tasks.values()) if (task.timeoutMs !== undefined && task.timeoutMs > longest) longest = task.timeoutMs;
  return longest;
}
