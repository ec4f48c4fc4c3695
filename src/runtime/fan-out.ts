// Fan-out: an invocation that finds more due work than it can run in its budget starts sibling invocations
// through the platform, up to `maxInvocations` live across the cluster, and one whose budget ends with work
// due hands its slot to a successor. The cap lives in the database (akadze.invocation_slots), so racing
// ticks can never hold more slots than there are.
import type { SQL } from "drizzle-orm";
import type { App } from "../app/app.js";
import { queryJson, type Db } from "../db/query.js";
import { InvalidInput } from "../core/errors.js";
import { confirmInvocationSlotStatement } from "../sql/fan-out/confirm-invocation-slot.js";
import { passInvocationSlotStatement } from "../sql/fan-out/pass-invocation-slot.js";
import { releaseInvocationSlotsStatement, releaseUntakenSlotStatement } from "../sql/fan-out/release-invocation-slots.js";
import { takeInvocationSlotsStatement } from "../sql/fan-out/take-invocation-slots.js";
import type { Claim } from "./claimer.js";
import type { BudgetClock } from "./budget-clock.js";
import { deadline } from "./deadline.js";
import { knownRunMs } from "./pace.js";
import type { Summary } from "./summary.js";
import type { TraceCarrier } from "../core/tracing.js";
import { DEFAULT_MAX_INVOCATIONS, MAX_BACKLOG_COUNT, MAX_INVOCATIONS, type FanOutOptions, type FanOutReport, type SiblingRequest } from "./fan-out-options.js";

export * from "./fan-out-options.js";

/** How long a taken slot outlives its holder's budget and lease: its last statements and its successor's first fit well inside. */
const END_GRACE_MS = 10_000;
/**
 * How long an invocation fan-out asks for has to confirm its slot (its first statement): a Worker's call to
 * itself or a warm function answers in milliseconds, a cold start in a second or two. A sibling gets at most
 * what is left of its starter's budget (at least MIN_TAKE_SLOT_WITHIN_MS), a successor, asked for once the
 * budget is spent, all of it.
 */
const TAKE_SLOT_WITHIN_MS = 3_000;
const MIN_TAKE_SLOT_WITHIN_MS = 500;


/** The scope of a set of queues: invocations claiming from the same queues share one cap. */
export function fanOutScope(queues: string[] | null): string {
  return queues === null ? "*" : [...new Set(queues)].sort().join(",");
}

interface SessionOptions {
  app: App;
  db: Db;
  id: string;
  queues: string[] | null;
  slots: number;
  batchSize: number;
  budgetMs: number;
  leaseMs: number;
  sqlNow: () => SQL;
  /** The invocation's budget, on its clock: what is left of it, and the deadlines of what it starts. */
  budget: BudgetClock;
  /** The invocation's stop signal: once it aborted, nothing more is started. */
  signal?: AbortSignal;
  /** The invocation's trace context, when the app traces: what it starts links to it. */
  trace?: TraceCarrier | null;
}

/**
 * One invocation's part in fan-out: `enter` takes (a tick) or confirms (a sibling, a successor) its slot before
 * it claims; `claimed` sizes the fan-out on the first claim's backlog and starts siblings beside the work;
 * `finish` hands the slot to a successor when the budget ended with work due, or frees it.
 */
export class FanOutSession {
  readonly report: FanOutReport;
  private readonly scope: string;
  private readonly cap: number;
  private readonly ttlMs: number;
  private readonly pending: Promise<unknown>[] = [];
  private statements = 0;
  private first = true;
  /** Whether the last claim that reached the database took all it asked for (so more is likely due). */
  private lastFull = false;
  /** No task fitted what was left of the budget: the invocation ended for its budget, not for want of work. */
  private budgetEnded = false;
  /** The last claim found due work beyond what it took (jobs other invocations held, or limited ones it had no room for). */
  private moreDue = false;

  constructor(private readonly f: FanOutOptions, private readonly o: SessionOptions) {
    const cap = f.maxInvocations ?? DEFAULT_MAX_INVOCATIONS;
    // Checked before anything is written: a bad cap is a clear error, not a silent clamp.
    if (!Number.isInteger(cap) || cap < 1 || cap > MAX_INVOCATIONS) {
      throw new InvalidInput(`Invalid runOnce options: fanOut.maxInvocations must be a whole number from 1 to ${MAX_INVOCATIONS}, got ${String(cap)}`);
    }
    if (typeof f.invoke !== "function") throw new InvalidInput("Invalid runOnce options: fanOut.invoke must be a function that starts one invocation");
    this.cap = cap;
    this.scope = fanOutScope(o.queues);
    this.ttlMs = o.budgetMs + o.leaseMs + END_GRACE_MS;
    this.report = { slot: null, chain: f.ticket?.chain ?? o.id, generation: f.ticket?.generation ?? 0, backlog: null, started: [], successor: null };
  }

  /**
   * How far a claim counts due jobs: the first, what `maxInvocations` invocations could run in one budget (to
   * size the fan-out); later ones, one more than they ask for (enough to tell whether work is left beyond them).
   */
  backlogBound(first: boolean, batchSize: number): number {
    return first ? Math.min(MAX_BACKLOG_COUNT, this.cap * this.perInvocation()) : batchSize + 1;
  }

  /** Takes or confirms this invocation's slot; false: it must not claim (no slot is live in its name, or none is free). */
  async enter(): Promise<boolean> {
    this.statements++;
    if (this.f.ticket) {
      this.report.slot = await queryJson<number | null>(this.o.db, confirmInvocationSlotStatement(this.scope, this.o.id, this.o.sqlNow(), this.ttlMs));
    } else {
      const [mine] = await this.take(1, null, [this.o.id], null, this.ttlMs);
      this.report.slot = mine?.slot ?? null;
    }
    return this.report.slot !== null;
  }

  /** Told of every claim: the first sizes the fan-out. */
  claimed(claim: Claim, asked: number): void {
    if (claim.noTaskFits) {
      this.budgetEnded = true; // no statement was sent: it says nothing of the backlog
      return;
    }
    this.lastFull = claim.claimed.length >= asked || claim.more || (claim.scheduled ?? 0) > 0;
    this.moreDue = (claim.backlog ?? 0) > claim.claimed.length;
    if (!this.first) return;
    this.first = false;
    this.report.backlog = claim.backlog ?? null;
    // A short first claim took all there was (or met siblings' locks: contention): starting more would not help.
    if (!this.lastFull || claim.backlog === undefined) return;
    const need = Math.min(this.cap, Math.ceil(claim.backlog / this.perInvocation()));
    if (need > 1 && !this.o.signal?.aborted) this.pending.push(this.invokeSiblings(need));
  }

  /**
   * At the end of the invocation: a successor if the budget ended with work due (or, ended early, more was due
   * and it got something done), else the slot is freed; then it waits for the calls in `pending`.
   */
  async finish(summary: Summary, budgetSpent: boolean): Promise<void> {
    if (this.report.slot !== null) {
      try {
        // Stopped on purpose (SIGTERM, the caller's signal): the chain ends here, whatever is due.
        if (this.o.signal?.aborted) await this.release([this.o.id]);
        else if ((budgetSpent || this.budgetEnded) && (this.lastFull || summary.released > 0)) await this.handOver(false);
        // Ended early while its last claim saw more due than it took (siblings held those jobs then): the chain's
        // last live invocation carries on, if it got something done. Jobs a limit holds back are not counted as
        // due beyond the limit's room (backlog.ts), so a limit never makes the chain spin: they wait for the next tick.
        // (A successor of one that ended no job could spin on a limit held elsewhere.)
        else if (this.moreDue && summary.jobsEnded > 0 && await this.handOver(true)) { /* handed over */ }
        else await this.release([this.o.id]);
      } catch (error) {
        // The slot expires on its own; the next tick carries on.
        this.o.app.log({ level: "error", message: "fan-out could not hand over or free its slot", fields: { invocation: this.o.id, error } });
      }
    }
    // (`pending` holds invokeSiblings itself and, without `waitUntil`, each call it made; with `waitUntil` the calls are the platform's to keep.)
    while (this.pending.length > 0) await Promise.allSettled(this.pending.splice(0));
    summary.fannedOut(this.report, this.statements);
  }

  /** Jobs one invocation runs in what is left of its budget: its slots times the jobs each runs, once their run time is known. */
  private perInvocation(): number {
    const runMs = knownRunMs(this.o.app);
    return runMs === null ? this.o.slots : Math.max(this.o.slots, Math.floor(this.o.slots * Math.max(0, this.o.budget.remainingMs()) / Math.max(runMs, 1)));
  }

  private take(count: number, total: number | null, holders: string[], startedBy: string | null, ttlMs: number): Promise<{ slot: number; holder: string }[]> {
    return queryJson(this.o.db, takeInvocationSlotsStatement({
      scope: this.scope, cap: this.cap, count, total, holders, chain: this.report.chain, startedBy,
      queues: this.o.queues, now: this.o.sqlNow(), ttlMs,
    }));
  }

  private release(holders: string[]): Promise<unknown> {
    this.statements++;
    return queryJson(this.o.db, releaseInvocationSlotsStatement(this.scope, holders, this.o.sqlNow()));
  }

  private async invokeSiblings(need: number): Promise<void> {
    const names = Array.from({ length: need - 1 }, () => this.mint(this.report.generation));
    const takeWithinMs = Math.min(TAKE_SLOT_WITHIN_MS, Math.max(MIN_TAKE_SLOT_WITHIN_MS, this.o.budget.remainingMs()));
    this.statements++;
    let taken: { slot: number; holder: string }[];
    try {
      taken = await this.take(need - 1, need, names, this.o.id, takeWithinMs);
    } catch (error) {
      this.o.app.log({ level: "error", message: "fan-out could not take slots for siblings", fields: { invocation: this.o.id, error } });
      return;
    }
    for (const { holder } of taken) {
      this.report.started.push(holder);
      this.invoke({ id: holder, kind: "sibling", generation: this.report.generation }, takeWithinMs);
    }
  }

  /** Hands the slot to a successor (`onlyIfLast`: only if no other invocation of the scope is live); false if it did not. */
  private async handOver(onlyIfLast: boolean): Promise<boolean> {
    const next = this.mint(this.report.generation + 1);
    this.statements++;
    const slot = await queryJson<number | null>(this.o.db, passInvocationSlotStatement({
      scope: this.scope, from: this.o.id, to: next, queues: this.o.queues, now: this.o.sqlNow(), takeWithinMs: TAKE_SLOT_WITHIN_MS, onlyIfLast,
    }));
    if (slot === null) return false;
    this.report.successor = next;
    this.invoke({ id: next, kind: "successor", generation: this.report.generation + 1 }, TAKE_SLOT_WITHIN_MS);
    return true;
  }

  /**
   * Asks the platform for one invocation, which has `takeWithinMs` to take its slot. If the call fails, or is still
   * on its way by then (aborted: an `ownUrl` request stops there), the slot is freed unless the invocation took
   * it, rather than left to expire. Without `waitUntil` the call is waited for until the budget's end at most.
   */
  private invoke(r: { id: string; kind: SiblingRequest["kind"]; generation: number }, takeWithinMs: number): void {
    const request: SiblingRequest = {
      ...r, chain: this.report.chain, startedBy: this.o.id, ...(this.o.queues ? { queues: this.o.queues } : {}),
      slots: this.o.slots, batchSize: this.o.batchSize, budgetMs: this.o.budgetMs, ...(this.o.trace ? { trace: this.o.trace } : {}),
    };
    const from = this.o.budget.mark();
    const abortCall = new AbortController();
    const call = Promise.resolve().then(() => this.f.invoke(request, { signal: abortCall.signal }));
    const takeBy = deadline(this.o.budget, from, takeWithinMs);
    let due = false;
    const answered = call.then(() => true, (error: unknown) => {
      if (!due) this.o.app.log({ level: "error", message: `fan-out's call for invocation ${r.id} failed; its slot is freed unless it took it`, fields: { invocation: r.id, error } });
      return false;
    });
    const slotChecked = Promise.race([answered, takeBy.passed.then(() => null)]).then(async (ok) => {
      takeBy.cancel();
      if (ok === true) return;
      due = ok === null;
      this.statements++;
      const freed = await queryJson<number>(this.o.db, releaseUntakenSlotStatement(this.scope, r.id, takeWithinMs, this.o.sqlNow())).catch(() => null);
      // A call still on its way whose invocation never took its slot is given up (one that did runs on).
      if (due && freed !== 0) {
        this.o.app.log({ level: "error", message: `fan-out invocation ${r.id} did not start within ${takeWithinMs} ms; the call is aborted and its slot freed`, fields: { invocation: r.id } });
        abortCall.abort(new Error(`akadze: invocation ${r.id} did not start within ${takeWithinMs} ms`));
      }
    });
    if (this.f.waitUntil) {
      this.f.waitUntil(answered);
      this.f.waitUntil(slotChecked);
      return;
    }
    const waitBy = deadline(this.o.budget, from, Math.max(takeWithinMs, this.o.budget.remainingMs()));
    this.pending.push(slotChecked, Promise.race([answered, waitBy.passed]).finally(waitBy.cancel));
  }

  /** A new invocation id: the chain, the budget it belongs to, and a random part (ids double as lease owners). */
  private mint(generation: number): string {
    return `${this.report.chain}.${generation}.${crypto.randomUUID().slice(0, 8)}`;
  }
}
