import { queryJsonWithin } from "./timed-query.js";
import { causeChain, errorMessage } from "../core/error-causes.js";
import type { Transition } from "../app/hooks.js";
import { traitsOf } from "../db/traits.js";
import { settleResultOf, settleStatement, type CompletedJob, type Outcome, type SettleAnswer, type SettleResult, type StartRequest } from "../sql/settle/settle.js";
import type { StartResult } from "../sql/claim/start.js";
import { transitionOf } from "../app/hooks.js";
import { sendWithTransitions } from "./send.js";
import { nextTurn, sleep } from "./signal.js";
import { storable, unstorableEntry } from "./storable.js";
import { answerTimeoutMs, type EngineContext } from "./engine-context.js";
import { RETRY_MAX_MS, RETRY_MIN_MS } from "./retry-wait.js";

/** Outcomes in order, cut into chunks of at most `max` bytes of JSON each (a larger outcome goes alone). */
function chunkByBytes(outcomes: Outcome[], max: number): Outcome[][] {
  const chunks: Outcome[][] = [];
  let current: Outcome[] = [];
  let bytes = 0;
  for (const o of outcomes) {
    const size = o.result === undefined && o.error === undefined ? 64 : JSON.stringify(o).length * 2;
    if (current.length > 0 && bytes + size > max) { chunks.push(current); current = []; bytes = 0; }
    current.push(o);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** Tries of one statement before its outcomes are split (or, alone, replaced by a storable failure). */
const TRIES = 3;

/** Tries an engine gives its unanswered outcomes at its end (at most about 1.5 s of backoff between them). */
const END_RESENDS = 5;

/** What a settler reads of its engine, and counts into. */
export type SettlerContext = Pick<EngineContext, "app" | "db" | "owner" | "sqlNow" | "now" | "keepSucceeded" | "settleAfter" | "budget"
  | "jobs" | "summary" | "unreported" | "pace" | "change" | "trace">;

/**
 * The outcome buffer: outcomes and start requests wait at most one macrotask, then go in one settle
 * statement (one at a time, so whatever arrives meanwhile shares the next one). A statement that fails is
 * retried, then split in halves until the outcome the database refuses is alone; that one is recorded as
 * its job's failure, and the others complete once. One job's outcome never decides another's. Outcomes
 * whose statement went unanswered are kept in their jobs' lives and sent again after a backoff, and at the
 * engine's end (`resendAtEnd`). Each answer moves the jobs' lives (held-jobs.ts) and is counted in the summary.
 */
export class Settler {
  private outcomes: Outcome[] = [];
  private start: StartRequest | null = null;
  private loop: Promise<void> | null = null;

  /** Settles wake workflows parked on the child jobs they end (the app declares workflows). */
  private readonly wakeParents: boolean;
  /** What is left of the budget: the transition hooks are not waited for past it (sendWithTransitions). */
  private readonly remainingMs = () => this.o.budget.remainingMs();
  /** The timer that sends unanswered outcomes again, and how many times it was set. */
  private resendTimer: ReturnType<typeof setTimeout> | undefined;
  private resends = 0;

  /** `unheld`: the engine's jobs leased and not held (unheld-jobs.ts), flagged when a start request fails. */
  constructor(private readonly o: SettlerContext, private readonly unheld: { mayExist: boolean }) {
    this.wakeParents = o.app.hasWorkflows();
  }

  push(outcome: Outcome): void {
    this.outcomes.push(outcome);
    this.kick();
  }

  /** Asks the next statement to start these prefetched jobs. One request at a time (see `startPending`). */
  requestStart(request: StartRequest): void {
    this.start = request;
    this.kick();
  }

  /** A start request is waiting or in flight. */
  startPending = false;

  /** Resolves once every outcome pushed so far is settled. */
  async flush(): Promise<void> {
    while (this.loop) await this.loop;
  }

  private kick(): void {
    if (this.start) this.startPending = true;
    this.loop ??= nextTurn().then(() => this.drain()).finally(() => { this.loop = null; });
  }

  private async drain(): Promise<void> {
    while (this.outcomes.length > 0 || this.start) {
      const outcomes = this.outcomes.splice(0).map((o) => storable(o, this.o.now));
      const start = this.start;
      this.start = null;
      // Only HTTP requests are capped; over a session one statement takes them all.
      const maxBytes = traitsOf(this.o.db).maxSettleBytes;
      const [first, ...rest] = maxBytes === null ? [outcomes] : chunkByBytes(outcomes, maxBytes);
      await this.settle(first ?? [], start);
      for (const chunk of rest) await this.settle(chunk, null);
    }
  }

  private async settle(outcomes: Outcome[], start: StartRequest | null): Promise<void> {
    let error: unknown;
    let unsure = false;
    for (let attempt = 1; attempt <= TRIES; attempt++) {
      try {
        const sent = { clock: this.o.now().getTime(), mono: performance.now() };
        const result = await this.send(outcomes, start);
        this.answered(result.done, outcomes, unsure);
        if (start) this.answer(start, result.start, sent);
        return;
      } catch (e) {
        error = e;
        if (!answered(e)) unsure = true;
        // A repeated settle is harmless: outcomes apply only where this owner still holds the lease, and
        // starting a job twice is the same as starting it once.
        if (refusedData(e)) break;
      }
    }
    if (!refusedData(error)) {
      // The database was not reached (or failed on its own): the outcomes are kept and sent again, the start's
      // jobs put back (answer).
      if (outcomes.length > 0) this.unanswered(outcomes, unsure);
      if (start) this.answer(start, null, { clock: 0, mono: 0 });
      return;
    }
    if (outcomes.length > 1) {
      const half = Math.ceil(outcomes.length / 2);
      await this.settle(outcomes.slice(0, half), start);
      await this.settle(outcomes.slice(half), null);
      return;
    }
    const [only] = outcomes;
    if (only && only.error?.kind !== "OutcomeNotStorable") {
      // The database refuses this outcome itself: record that, as this job's failure.
      const reason = `the database refused this job's outcome (${only.kind}): ${errorMessage(error)}`;
      return this.settle([{ id: only.id, kind: "fail", attempt: only.attempt, error: unstorableEntry(only, this.o.now(), reason) }], start);
    }
    if (outcomes.length > 0) this.unanswered(outcomes, unsure);
    if (start) this.answer(start, null, { clock: 0, mono: 0 });
  }

  /**
   * The database answered a settle of `sent`, moving `done`; `unsure`: an earlier try of it may have committed
   * unanswered, so the outcomes it did not move may be recorded already.
   */
  private answered(done: CompletedJob[], sent: Outcome[], unsure: boolean): void {
    const lost = this.o.jobs.settleAnswered(sent, done, unsure);
    this.o.summary.settled(done, sent.length, lost, unsure);
    this.o.unreported.settled(done);
  }

  /**
   * The answer to a start request (`null` when it failed), with when it was sent: local clock and monotonic ms. A
   * failed request's jobs are no longer held, but still leased to this owner (marked started, if it committed
   * unanswered): the release of unheld jobs puts them back, attempt refunded, before the next claim. Their lease
   * would not: it is the owner's, which a live engine's claims keep renewing.
   */
  private answer(start: StartRequest, result: StartResult | null, sent: { clock: number; mono: number }): void {
    if (!this.start) this.startPending = false;
    if (!result) this.unheld.mayExist = true;
    const answer = result ? { ...result, started: result.started.map(Number) } : null;
    this.o.jobs.answerStarts(start.ids, answer, sent);
    if (answer) this.o.summary.startAnswered(answer);
    this.o.change.notify();
  }

  /**
   * A settle of `outcomes` could not be recorded (the database stayed unreachable; `unsure`: or its answers were
   * lost): they are kept and sent again after a short backoff (the database may be back), and once more at the end.
   */
  private unanswered(outcomes: Outcome[], unsure: boolean): void {
    this.o.jobs.settleLost(outcomes, unsure);
    if (this.resendTimer !== undefined) return;
    const backoff = Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** this.resends++);
    this.resendTimer = setTimeout(() => { this.resendTimer = undefined; this.resend(); }, backoff);
  }

  /**
   * At the engine's end: unanswered outcomes are sent again, up to END_RESENDS times with the same backoff (one try
   * was not enough: at a tenth of answers dropped, an invocation in a few hundred lost a whole settle, and its jobs,
   * run, were charged by lease recovery); those still unanswered are counted lost (or unconfirmed).
   */
  async resendAtEnd(): Promise<void> {
    const { jobs } = this.o;
    for (let tries = 0; tries < END_RESENDS && jobs.unsettled > 0; tries++) {
      clearTimeout(this.resendTimer);
      this.resendTimer = undefined;
      if (tries > 0) await sleep(Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** tries));
      this.resend();
      await this.flush();
    }
    clearTimeout(this.resendTimer);
    this.resendTimer = undefined;
    if (jobs.unsettled === 0) return;
    const { lost, unsure } = jobs.unconfirmed();
    this.o.summary.unanswered(lost, unsure);
  }

  private resend(): void {
    for (const outcome of this.o.jobs.resend()) this.push(outcome);
  }

  private async send(outcomes: Outcome[], start: StartRequest | null): Promise<SettleResult> {
    const { jobs } = this.o;
    // (Each outcome is one held job's: the engine holds others when it holds more jobs than the statement settles.)
    const othersHeld = jobs.size > outcomes.length;
    const after = outcomes.length > 0 ? this.o.unreported.take((n) => this.o.settleAfter(n, othersHeld)) : [];
    const statement = settleStatement(this.o.owner, this.o.sqlNow(), outcomes, start, after, { keepSucceeded: this.o.keepSucceeded, wakeParents: this.wakeParents });
    const began = performance.now();
    const traced = this.o.trace?.settle(outcomes.length, start?.ids.length ?? 0);
    try {
      const result = await sendWithTransitions(this.o.db, this.o.app.hooks, async (db) => settleResultOf(await queryJsonWithin<SettleAnswer>(db, statement, answerTimeoutMs(this.o), "a settle"), outcomes), (r) => [
        ...r.done.map((d) => transitionOf(d, d.error ?? undefined)),
        ...(r.start?.stopped ?? []).map((t) => transitionOf({ ...t, from: "running", to: "cancelled" })),
        ...(r.start?.denied ?? []).map((t) => transitionOf({ ...t, from: "running", to: "queued" })),
      ] as Transition[], this.remainingMs);
      traced?.end(result.done.length);
      return result;
    } catch (error) {
      traced?.end(0, error);
      throw error;
    } finally {
      this.o.summary.roundTrip();
      this.o.pace.roundTripTook(performance.now() - began);
    }
  }
}

/**
 * The statement reached the database and was refused for what it carried: a data exception (22xxx), a
 * constraint (23xxx), a program limit (54xxx), or an HTTP body over Neon's caps (413, 507).
 */
function refusedData(error: unknown): boolean {
  return causeChain(error).some((e) => (typeof e.code === "string" && /^(22|23|54)/.test(e.code)) || /HTTP status (413|507)/.test(String(e.message)));
}

/**
 * The database (or the HTTP endpoint in front of it) answered with an error, so the statement did not
 * commit: a SQLSTATE, or an HTTP status. A dropped connection or a request timeout may have committed.
 */
export function answered(error: unknown): boolean {
  return causeChain(error).some((e) => (typeof e.code === "string" && /^[0-9A-Z]{5}$/.test(e.code)) || /HTTP status \d{3}/.test(String(e.message)));
}

