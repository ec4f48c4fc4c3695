import type { SQL } from "drizzle-orm";
import type { App } from "../app/app.js";
import type { Transition } from "../app/hooks.js";
import { isNeonHttp, query, queryJsonPrepared, type Db } from "../db/query.js";
import { analyzeJobsStatement, statisticsStale } from "../sql/analyze.js";
import { claimJobsStatement, type ClaimResult } from "../sql/claim.js";
import type { SlotReport } from "../sql/enqueue-due-slots.js";
import { ScheduleSlots } from "../schedules/enqueue.js";
import { sendWithTransitions, transitionOf } from "./send.js";
import { CLAIM_MARGIN_MS } from "./run-options.js";

/** Over neon-http a claim returns at most this many bytes of args (Neon refuses responses over 10 MB). */
export const MAX_CLAIM_BYTES = 6 * 1024 * 1024;
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
}

/** A claim's result, plus whether it could not even be sent because no task fits the remaining budget. */
export interface Claim extends ClaimResult { noTaskFits: boolean }

/**
 * Claims batches for one invocation: picks the tasks whose timeout fits the remaining budget, carries the
 * schedules that came due (each slot once per process), extra CTEs on request, and the limit CTEs only
 * while some limit exists (each claim reports whether one does).
 */
/**
 * What a process learned about the database from its last claims, shared by the invocations of one app:
 * whether any limit exists (a claim without the limit CTEs never takes a limited job, so a stale `false`
 * only leaves limited jobs for the next claim, which reports the truth), and when retention last ran.
 */
const hints = new WeakMap<App, { limits: boolean; prunedAt: number }>();
/**
 * When this process last started an ANALYZE of the jobs table for an app: at most one a minute, so a role
 * that may not analyze (Postgres skips it with a warning) does not add a statement to every full claim.
 */
const analyzedAt = new WeakMap<App, number>();
const ANALYZE_EVERY_MS = 60_000;

/** How often one process lets an invocation's first claim carry retention. */
export const RETENTION_EVERY_MS = 10_000;

export class Claimer {
  private get limits(): boolean { return hints.get(this.o.app)?.limits ?? true; }
  private set limits(value: boolean) { hints.set(this.o.app, { prunedAt: hints.get(this.o.app)?.prunedAt ?? 0, ...hints.get(this.o.app), limits: value }); }

  /** Whether this claim should carry retention: at most once per RETENTION_EVERY_MS per app in this process. */
  static pruneDue(app: App): boolean {
    const h = hints.get(app) ?? { limits: true, prunedAt: 0 };
    if (Date.now() - h.prunedAt < RETENTION_EVERY_MS) return false;
    hints.set(app, { ...h, prunedAt: Date.now() });
    return true;
  }
  private readonly schedules: ScheduleSlots;
  /** The ANALYZE this claimer started, if any: the invocation waits for it before it returns. */
  private analysis: Promise<void> = Promise.resolve();
  /** Tasks not claimed because their timeout did not fit the budget, as of the first claim. */
  tooLongForBudget: string[] | null = null;

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
      return { claimed: [], recovered: [], cancelled: [], rateLimited: [], tooLarge: [], more: false, limits: this.limits, noTaskFits: true };
    }
    const schedules = this.schedules.forClaim(this.o.now(), this.o.sqlNow());
    const statement = claimJobsStatement({
      owner: this.o.owner, now: this.o.sqlNow(), leaseMs: this.o.leaseMs, batchSize, startCount, tasks: fit,
      queues: this.o.queues, limits: this.limits, maxBytes: isNeonHttp(this.o.db) ? MAX_CLAIM_BYTES : null,
      extra: [...extra, ...schedules.extra],
      report: { ...schedules.report, stale: statisticsStale(batchSize) },
    });
    this.o.count();
    const result = await sendWithTransitions(this.o.db, this.o.app.hooks, (db) => queryJsonPrepared<ClaimResult>(db, statement), (r) => [
      ...r.recovered.map((t) => transitionOf(t)), ...r.cancelled.map((t) => transitionOf(t)), ...r.rateLimited.map((t) => transitionOf(t)), ...r.tooLarge.map((t) => transitionOf(t)),
      ...r.claimed.map((j): Transition => ({ jobId: Number(j.id), task: j.task, queue: j.queue, from: "queued", to: "running", attempt: j.attempt })),
    ]);
    schedules.answered((result as ClaimResult & { schedules?: SlotReport }).schedules);
    this.limits = result.limits;
    result.claimed = result.claimed.map((j) => ({ ...j, id: Number(j.id) }));
    if ((result as { stale?: boolean }).stale) this.analyze();
    return { ...result, noTaskFits: false };
  }

  /** Resolves when the ANALYZE this claimer started (if any) has ended. */
  finished(): Promise<void> {
    return this.analysis;
  }

  /** Refreshes the jobs table's statistics beside the claims (its failure only leaves them stale). */
  private analyze(): void {
    const last = analyzedAt.get(this.o.app);
    if (last !== undefined && Date.now() - last < ANALYZE_EVERY_MS) return;
    analyzedAt.set(this.o.app, Date.now());
    this.o.count();
    this.analysis = query(this.o.db, analyzeJobsStatement()).then(() => {}, () => {});
  }
}
