import type { CycleRules } from "./claim-cycle.js";

/** What a policy sees of the engine when it sizes a claim. */
export interface ClaimView {
  slots: number;
  /** Jobs claimed and not yet started, in the local queue. */
  queued: number;
  /** Slots with no job running or held for them: what a claim starts besides the lookahead. */
  free: number;
  /** Jobs that would start within a round trip, at the pace measured so far. */
  lookahead: number;
  /** Whether the pace is measured yet (a job ran and a statement came back); until then `lookahead` is 0. */
  paced: boolean;
}

/**
 * How an engine claims: the one difference between an invocation (`runOnce`) and a lane of a long-lived
 * worker, injected instead of flags. The rules feed the claim cycle (claim-cycle.ts); the sizes and the
 * moment to claim are read from the engine's local queue and pace.
 */
export interface ClaimPolicy extends CycleRules {
  /** The most jobs one claim asks for: the invocation's batch, or the worker's prefetch (what sizes the pace's lookahead). */
  batchSize: number;
  firstSize(view: ClaimView): number;
  nextSize(view: ClaimView): number;
  /** Whether a later claim is worth sending now (the cycle is open and no claim is on its way). */
  worthClaiming(view: ClaimView): boolean;
  /**
   * Whether a claim goes out as soon as it is asked for, before the jobs already held run on. A worker lane's does:
   * its next claim, asked for as the last one is answered, otherwise waited behind the quick bodies of the jobs
   * it held (5-9 ms for 1,000 no-op jobs), with the slots idle while it ran after. An invocation's does not: on
   * the bench's 2 cores its loops fill each other's gaps already, and sending at once ran its burn-down slower.
   */
  sendsClaimsAtOnce: boolean;
  /** A worker lane's wait for work once its claims ran dry: resolves true to claim again, false to end. */
  idle?: () => Promise<boolean>;
}

/** Claims ahead once the local queue holds no more than the free slots and what starts within a round trip. */
const lowQueue = (v: ClaimView) => v.queued <= v.slots + v.lookahead;

/**
 * An invocation's: a whole batch each time (a small top-up claim costs nearly as much as a whole one), again
 * while work is due and budget remains (`drain`; false: exactly one claim), retrying a failed claim after a
 * short backoff, and ending once the queue is found empty.
 *
 * `startsFirst`: until the pace is known, claim the jobs that start at once (the free slots) and one more, and
 * claim again once a slot is free. A job claimed and not started is held; starting it later writes its row a
 * second time (a start statement), which for quick jobs costs more than the claim it saves: an invocation's first
 * claim of 2,000 with 200 slots held 1,800, and their start took 40 ms of Postgres (its whole first burn-down of
 * 20,000 jobs ran about 10 % slower). The one more tells a queue that had no more than the slots (a short claim:
 * no second look) from one that has more. The runtime asks for it only where a later claim can follow (drain,
 * and the budget has room for one) and held jobs have no use of their own (no batch task gathers them).
 */
export function invocationPolicy(o: { batchSize: number; drain: boolean; startsFirst?: boolean }): ClaimPolicy {
  const startsOnly = (v: ClaimView) => o.startsFirst === true && !v.paced;
  const size = (v: ClaimView) => startsOnly(v) ? Math.min(o.batchSize, v.free + 1) : o.batchSize;
  return { batchSize: o.batchSize, drain: o.drain, idles: false, sendsClaimsAtOnce: false, firstSize: size, nextSize: size,
    worthClaiming: (v) => lowQueue(v) && (!startsOnly(v) || v.free > 0) };
}

/**
 * A worker lane's: claims sized to the work (the slots plus what would start within two round trips, at most
 * `prefetch`), so quick jobs are claimed hundreds at a time and slow ones about a slot's worth; a failed or
 * empty claim waits for `idle` (a wake-up or the next poll).
 */
export function workerLanePolicy(o: { prefetch: number; idle: () => Promise<boolean> }): ClaimPolicy {
  const full = (v: ClaimView) => Math.min(o.prefetch, v.slots + 2 * v.lookahead);
  // A few slots' worth: what a lane takes before it knows its jobs' pace, and at most after a wait for work.
  const few = (v: ClaimView) => Math.min(o.prefetch, 4 * v.slots);
  let waited = false;
  return {
    batchSize: o.prefetch, drain: true, idles: true, sendsClaimsAtOnce: true,
    idle: () => { waited = true; return o.idle(); },
    // Knowing nothing of its jobs' pace yet, a lane takes a few slots' worth: quick jobs then start ahead from
    // the first statement on, and slow ones are held, not started. Knowing it (an earlier lane of the app), the
    // jobs the claim starts and no more: nothing runs until the first claim is answered, so it is not made
    // to wait for a second round trip's worth of jobs, whose start would be a statement of its own.
    firstSize: (v) => Math.max(v.paced ? Math.min(full(v), v.free + v.lookahead) : full(v), few(v)),
    // The claim after a wait (a wake-up or a poll) asks for a few slots' worth, less only when the pace says
    // jobs are slow: its size is in the statement's text (the lock limit), so a size that followed the pace's
    // drift while idle sent texts Postgres had not planned yet, and an idle lane's claims, the wake-up's among
    // them, were planned afresh (about 1 ms each; 10 ms for a text new to the connection). This way they repeat
    // one text, whose plan Postgres keeps after five runs. A burst found this way is claimed at the pace's size
    // from the next claim on.
    nextSize: (v) => {
      const size = Math.max(1, full(v) - v.queued);
      if (!waited) return size;
      waited = false;
      return v.paced ? Math.min(size, few(v)) : Math.max(size, few(v));
    },
    // With quick jobs (claims larger than twice the slots) it claims once it has room for half a claim: a
    // claim for the few jobs short of its prefetch costs nearly as much as a whole one.
    worthClaiming: (v) => lowQueue(v) && (full(v) <= 2 * v.slots || v.queued <= full(v) / 2),
  };
}
