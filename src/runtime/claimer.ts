import { queryJsonWithin } from "./timed-query.js";
import type { App } from "../app/app.js";
import type { Transition } from "../app/hooks.js";
import { type Db } from "../db/query.js";
import { traitsOf } from "../db/traits.js";
import { claimCore, claimJobsStatement, type ClaimParams } from "../sql/claim/claim.js";
import { claimResultOf, type ClaimAnswer, type ClaimResult } from "../sql/claim/claim-answer.js";
import { transitionOf } from "../app/hooks.js";
import { sendWithTransitions } from "./send.js";
import { CLAIM_MARGIN_MS } from "../core/claim-margin.js";
import type { ClaimRider, Ride } from "./rider.js";
import { memoryOf } from "./process-memory.js";
import { answerTimeoutMs, type EngineContext } from "./engine-context.js";

/** The least room a claim leaves for its own round trip once round trips were measured. */
const MIN_MARGIN_MS = 50;

/** What a claimer reads of its engine. */
export type ClaimerContext = Pick<EngineContext, "app" | "db" | "owner" | "leaseMs" | "queues" | "sqlNow" | "budget" | "pace" | "summary" | "riders" | "drains" | "trace">;

/** A claim's result, plus whether it could not even be sent because no task fits the remaining budget. */
export interface Claim extends ClaimResult { noTaskFits: boolean }

/** How long after its last claim that saw a job with a fairness key a process still walks the keys. */
const FAIR_HINT_MS = 60_000;
/**
 * Claims batches for one engine: picks the tasks whose timeout fits the remaining budget, sends the core claim
 * with the limit CTEs only while some limit exists, the stop CTEs only while a queued job must be cancelled and
 * the fair walk only while keyed jobs are queued (each claim reports whether they are; before any claim told the
 * process, a draining engine goes without them and claims again at once when told it needed them), with its
 * riders (riders.ts) in the same statement, and hands each ride the answer.
 */
export class Claimer {
  /** Tasks not claimed because their timeout did not fit the budget, as of the first claim. */
  tooLongForBudget: string[] | null = null;

  /** What is left of the budget: the transition hooks are not waited for past it (sendWithTransitions). */
  private readonly remainingMs = () => this.o.budget.remainingMs();

  constructor(private readonly o: ClaimerContext) {}

  /**
   * The task names worth claiming now: a declared timeout must fit the remaining budget with room for the
   * claim's own round trip (CLAIM_MARGIN_MS until one was measured, then a few round trips); a task without
   * one runs on what is left of the budget, so it needs CLAIM_MARGIN_MS of it.
   */
  fittingTasks(): { fit: string[]; tooLong: string[] } {
    const remaining = this.o.budget.remainingMs();
    const rtt = this.o.pace.roundTripMs;
    const margin = rtt === null ? CLAIM_MARGIN_MS : Math.min(CLAIM_MARGIN_MS, Math.max(MIN_MARGIN_MS, 4 * rtt));
    const fit: string[] = [];
    const tooLong: string[] = [];
    for (const t of this.o.app.tasks.values()) {
      const fits = t.timeoutMs === undefined ? remaining >= CLAIM_MARGIN_MS : t.timeoutMs <= remaining - margin;
      (fits ? fit : tooLong).push(t.name);
    }
    return { fit, tooLong };
  }

  /** Sends a claim of up to `batchSize` jobs, `startCount` of them started at once; `first`: the engine's first. */
  async claim(batchSize: number, startCount: number, first: boolean): Promise<Claim> {
    const { fit, tooLong } = this.fittingTasks();
    this.tooLongForBudget ??= tooLong;
    const memory = memoryOf(this.o.app);
    if (fit.length === 0) {
      return { claimed: [], recovered: [], cancelled: [], rateLimited: [], tooLarge: [], more: false, limits: memory.limits ?? true, stops: memory.stops ?? true, fair: memory.fair ?? true, noTaskFits: true };
    }
    // Not learned yet (the process's first claim): carried only by an engine that sends one claim; a draining one
    // learns from this claim's answer, and asks for the next at once if it needed them (below).
    const withLimits = memory.limits ?? !this.o.drains;
    const withStops = memory.stops ?? !this.o.drains;
    // Likewise the fair walk; a draining engine's claim without it takes no keyed job then (the next shares them fairly).
    const withFair = memory.fair ?? !this.o.drains;
    const keyed = memory.fair !== null || withFair;
    // A fair claim by turns sends the plain scan only while a job without a turn is due (the last one saw it).
    const withPlain = memory.plainDue ?? true;
    const params: ClaimParams = {
      owner: this.o.owner, now: this.o.sqlNow(), leaseMs: this.o.leaseMs, batchSize, startCount, tasks: fit,
      queues: this.o.queues, limits: withLimits, stops: withStops, fair: withFair, keyed, fairSubKeys: memory.fairSubKeys, unpark: memory.parkedDue ?? true, plain: withPlain, fairPriorities: memory.fairPriorities ?? true, maxBytes: traitsOf(this.o.db).maxClaimBytes, traced: !!this.o.trace,
    };
    const core = claimCore(params);
    const rides = this.o.riders.map((rider) => rider.ride({ first, batchSize, drains: this.o.drains, core })).filter((ride): ride is Ride => ride !== null);
    const statement = claimJobsStatement(params, rides);
    this.o.summary.roundTrip();
    const traced = this.o.trace?.claim(batchSize);
    let result: ClaimResult;
    try {
      result = await sendWithTransitions(this.o.db, this.o.app.hooks, async (db) => claimResultOf(await queryJsonWithin<ClaimAnswer>(db, statement, answerTimeoutMs(this.o), "a claim"), !!traced), (r) => [
        ...r.recovered.map((t) => transitionOf(t)), ...r.cancelled.map((t) => transitionOf(t)), ...r.rateLimited.map((t) => transitionOf(t)), ...r.tooLarge.map((t) => transitionOf(t)),
        ...r.claimed.map((j): Transition => ({ jobId: j.id, task: j.task, queue: j.queue, from: "queued", to: "running", attempt: j.attempt })),
      ], this.remainingMs);
    } catch (error) {
      traced?.end(0, error);
      throw error;
    }
    traced?.end(result.claimed.length);
    memory.limits = result.limits;
    memory.stops = result.stops;
    if (result.fair) memory.fairSeenAt = Date.now();
    // Sticky for a while: a tenant's burst right after a moment without keyed jobs is still claimed fairly.
    memory.fair = result.fair || Date.now() - memory.fairSeenAt < FAIR_HINT_MS;
    // Sub-keys likewise, learned from a fair claim: off until one is seen, so a process whose tenants have none
    // never sends the sub-key walk (its recursive estimate alone would cost a claim JIT's compilation).
    if (result.fairSubKeys) memory.fairSubKeysSeenAt = Date.now();
    if (result.fairSubKeys !== undefined) memory.fairSubKeys = result.fairSubKeys || Date.now() - memory.fairSubKeysSeenAt < FAIR_HINT_MS;
    if (result.parkedDue !== undefined) memory.parkedDue = result.parkedDue;
    memory.plainDue = result.plainDue ?? null;
    if (result.fairPriorities !== undefined) memory.fairPriorities = result.fairPriorities;
    // A rider with more to carry (runtime schedules learned with a slot due) asks for the next claim at once.
    let more = false;
    for (const ride of rides) if (ride.answered?.(result, this.o.summary.roundTrip) === true) more = true;
    // Sent without the limit CTEs, it could not take a limited job; a limit exists now (the process's first
    // setLimit): the next claim, with them, may find that key's due jobs. Likewise a job to cancel, without the
    // stop CTEs: the next claim cancels it. And keyed jobs left for a fair claim (a plain claim reads none with a
    // turn), or jobs without a turn for one with the plain scan.
    return { ...result, more: result.more || (!withLimits && result.limits) || (!withStops && result.stops) || (!withFair && result.fair) || (!withPlain && result.plainDue === true) || more, noTaskFits: false };
  }

  /** Resolves when what the riders started beside the claims (maintenance, ANALYZE, VACUUM) has ended. */
  async finished(): Promise<void> {
    await Promise.all(this.o.riders.map((rider) => rider.finished?.()));
  }
}

/** The longest timeout any of the app's tasks declares (-Infinity if none does). */
export function longestTimeoutMs(app: App): number {
  let longest = -Infinity;
  for (const task of app.tasks.values()) if (task.timeoutMs !== undefined && task.timeoutMs > longest) longest = task.timeoutMs;
  return longest;
}
