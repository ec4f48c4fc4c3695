// The engine's claim cycle (issue 23, item 1): the phase and its pure transition function, driven without
// Postgres, timers or promises; and the two claim policies' sizes.
import { describe, expect, it } from "vitest";
import { nextCycle, NEW_CYCLE, type ClaimCycle, type ClaimEvent, type CycleRules } from "../../src/runtime/claim-cycle.js";
import { invocationPolicy, workerLanePolicy } from "../../src/runtime/claim-policy.js";

const INVOCATION: CycleRules = { drain: true, idles: false };
const ONE_CLAIM: CycleRules = { drain: false, idles: false };
const LANE: CycleRules = { drain: true, idles: true };

const answered = (o: Partial<Extract<ClaimEvent, { kind: "answered" }>> = {}): ClaimEvent =>
  ({ kind: "answered", short: false, more: false, noTaskFits: false, busy: false, ...o });

/** Runs `events` from NEW_CYCLE and returns every phase passed through. */
function phases(rules: CycleRules, events: ClaimEvent[]): string[] {
  let state: ClaimCycle = NEW_CYCLE;
  return events.map((e) => (state = nextCycle(state, e, rules)).phase);
}

describe("the claim cycle", () => {
  it("an invocation claims while claims come back full and is exhausted by a short one", () => {
    expect(phases(INVOCATION, [{ kind: "sent" }, answered(), { kind: "sent" }, answered({ short: true })]))
      .toEqual(["claiming", "open", "claiming", "exhausted"]);
  });

  it("a short claim whose own statement made jobs it could not see (schedules, recovery, a size cap) leaves the cycle open", () => {
    expect(phases(INVOCATION, [{ kind: "sent" }, answered({ short: true, more: true })])).toEqual(["claiming", "open"]);
  });

  it("drain: false is exhausted by its one claim, full or not, and never looks again", () => {
    expect(phases(ONE_CLAIM, [{ kind: "sent" }, answered({ busy: true }), { kind: "quiet", endedSinceClaim: 5 }]))
      .toEqual(["claiming", "exhausted", "exhausted"]);
  });

  it("an invocation's short claim sent while bodies ran gets one more look once they ended, and only one", () => {
    const look = phases(INVOCATION, [
      { kind: "sent" }, answered({ short: true, busy: true }),
      { kind: "quiet", endedSinceClaim: 0 }, // nothing ended since: nothing new can be due
      { kind: "quiet", endedSinceClaim: 3 },
      { kind: "sent" }, answered({ short: true, busy: false }),
      { kind: "quiet", endedSinceClaim: 3 },
    ]);
    expect(look).toEqual(["claiming", "exhausted", "exhausted", "open", "claiming", "exhausted", "exhausted"]);
  });

  it("no task fitting the budget exhausts the cycle for good: no look again", () => {
    expect(phases(INVOCATION, [{ kind: "sent" }, answered({ noTaskFits: true, busy: true, short: true }), { kind: "quiet", endedSinceClaim: 9 }]))
      .toEqual(["claiming", "exhausted", "exhausted"]);
  });

  it("an invocation's failed claim backs off and opens again when the retry is due; with no budget left it is exhausted", () => {
    expect(phases(INVOCATION, [{ kind: "sent" }, { kind: "failed", retry: true }, { kind: "retryDue" }, { kind: "sent" }, { kind: "failed", retry: false }]))
      .toEqual(["claiming", "backoff", "open", "claiming", "exhausted"]);
  });

  it("a worker lane never backs off: a failed or short claim waits for work, then claims again or ends", () => {
    expect(phases(LANE, [
      { kind: "sent" }, { kind: "failed", retry: true }, { kind: "idleBegan" }, { kind: "idleEnded", again: true },
      { kind: "sent" }, answered({ short: true, busy: true }), { kind: "quiet", endedSinceClaim: 4 }, { kind: "idleBegan" }, { kind: "idleEnded", again: false },
    ])).toEqual(["claiming", "exhausted", "idling", "open", "claiming", "exhausted", "exhausted", "idling", "ended"]);
  });

  it("an invocation never idles, and events that do not apply in a phase change nothing", () => {
    expect(phases(INVOCATION, [{ kind: "sent" }, answered({ short: true }), { kind: "idleBegan" }])).toEqual(["claiming", "exhausted", "exhausted"]);
    const open = nextCycle(NEW_CYCLE, answered(), INVOCATION);
    expect(open).toBe(NEW_CYCLE); // an answer with no claim on its way
    for (const e of [{ kind: "retryDue" }, { kind: "idleEnded", again: true }, { kind: "failed", retry: true }] as ClaimEvent[]) {
      expect(nextCycle(NEW_CYCLE, e, LANE)).toBe(NEW_CYCLE);
    }
    const claiming = nextCycle(NEW_CYCLE, { kind: "sent" }, INVOCATION);
    expect(nextCycle(claiming, { kind: "sent" }, INVOCATION)).toBe(claiming); // one claim on its way at a time
  });

  it("ended is final", () => {
    let state = nextCycle(nextCycle(nextCycle(nextCycle(NEW_CYCLE, { kind: "sent" }, LANE), answered({ short: true }), LANE), { kind: "idleBegan" }, LANE), { kind: "idleEnded", again: false }, LANE);
    expect(state.phase).toBe("ended");
    for (const e of [{ kind: "sent" }, answered(), { kind: "retryDue" }, { kind: "idleBegan" }, { kind: "quiet", endedSinceClaim: 1 }] as ClaimEvent[]) {
      state = nextCycle(state, e, LANE);
      expect(state.phase).toBe("ended");
    }
  });
});

describe("the claim policies", () => {
  it("an invocation asks for its whole batch every time and claims ahead once its queue holds no more than the free slots and a round trip's starts", () => {
    const p = invocationPolicy({ batchSize: 100, drain: true });
    expect(p.firstSize({ slots: 10, queued: 0, free: 10, lookahead: 0, paced: true })).toBe(100);
    expect(p.nextSize({ slots: 10, queued: 7, free: 3, lookahead: 3, paced: true })).toBe(100);
    expect(p.worthClaiming({ slots: 10, queued: 13, free: 0, lookahead: 3, paced: true })).toBe(true);
    expect(p.worthClaiming({ slots: 10, queued: 14, free: 0, lookahead: 3, paced: true })).toBe(false);
  });

  it("an invocation that starts first claims what it starts at once and one more until the pace is known: its free slots, and no claim while none is free", () => {
    const p = invocationPolicy({ batchSize: 100, drain: true, startsFirst: true });
    expect(p.firstSize({ slots: 10, queued: 0, free: 10, lookahead: 0, paced: false })).toBe(11);
    expect(p.nextSize({ slots: 10, queued: 0, free: 3, lookahead: 0, paced: false })).toBe(4);
    expect(p.worthClaiming({ slots: 10, queued: 0, free: 0, lookahead: 0, paced: false })).toBe(false);
    expect(p.worthClaiming({ slots: 10, queued: 0, free: 1, lookahead: 0, paced: false })).toBe(true);
    // A batch smaller than the slots is the batch; once paced, the whole batch.
    expect(invocationPolicy({ batchSize: 4, drain: true, startsFirst: true }).firstSize({ slots: 10, queued: 0, free: 10, lookahead: 0, paced: false })).toBe(4);
    expect(p.nextSize({ slots: 10, queued: 0, free: 0, lookahead: 500, paced: true })).toBe(100);
    // Without it (exactly one claim, a budget with no room for a second, a batch task), the whole batch, paced or not.
    expect(invocationPolicy({ batchSize: 100, drain: true }).firstSize({ slots: 10, queued: 0, free: 10, lookahead: 0, paced: false })).toBe(100);
  });

  it("a worker lane sizes claims to the work: a few slots' worth first (what it starts, once the pace is known), then the slots and two round trips' starts, at most its prefetch, less what it holds", () => {
    const p = workerLanePolicy({ prefetch: 500, idle: async () => true });
    expect(p.firstSize({ slots: 10, queued: 0, free: 10, lookahead: 0, paced: false })).toBe(40);
    // An app's later lane knows the pace: its first claim takes what it starts (the free slots and one round trip's
    // starts), not a second round trip's worth that would wait for a start statement; at most the prefetch, at least
    // a few slots' worth.
    expect(p.firstSize({ slots: 10, queued: 0, free: 10, lookahead: 200, paced: true })).toBe(210);
    expect(p.firstSize({ slots: 10, queued: 0, free: 10, lookahead: 1000, paced: true })).toBe(500);
    expect(p.firstSize({ slots: 10, queued: 0, free: 10, lookahead: 2, paced: true })).toBe(40);
    expect(p.nextSize({ slots: 10, queued: 0, free: 10, lookahead: 2, paced: true })).toBe(14); // slow jobs: about a slot's worth
    expect(p.nextSize({ slots: 10, queued: 100, free: 0, lookahead: 1000, paced: true })).toBe(400); // quick jobs: the prefetch, less what it holds
    // Quick jobs: it waits until it has room for half a claim rather than top up a few.
    expect(p.worthClaiming({ slots: 10, queued: 300, free: 0, lookahead: 1000, paced: true })).toBe(false);
    expect(p.worthClaiming({ slots: 10, queued: 250, free: 0, lookahead: 1000, paced: true })).toBe(true);
  });

  it("a worker lane's claim after a wait for work asks for a few slots' worth (less for slow jobs), whatever the pace's drift, and the next one for the pace's size again", async () => {
    const p = workerLanePolicy({ prefetch: 1000, idle: async () => true });
    // Before any job ran the pace knows nothing: the few slots' worth of a lane's first claim.
    await p.idle!();
    expect(p.nextSize({ slots: 10, queued: 0, free: 10, lookahead: 0, paced: false })).toBe(40);
    // Quick jobs: the pace asks for the whole prefetch, a size that drifts with the measured round trips.
    expect(p.nextSize({ slots: 10, queued: 0, free: 10, lookahead: 700, paced: true })).toBe(1000);
    expect(await p.idle!()).toBe(true);
    // After the wait, the same few slots' worth (one statement text) whatever the pace says.
    expect(p.nextSize({ slots: 10, queued: 0, free: 10, lookahead: 700, paced: true })).toBe(40);
    expect(p.nextSize({ slots: 10, queued: 0, free: 10, lookahead: 700, paced: true })).toBe(1000);
    await p.idle!();
    expect(p.nextSize({ slots: 10, queued: 0, free: 10, lookahead: 130, paced: true })).toBe(40);
    // Slow jobs: what the pace asks for, when that is less.
    await p.idle!();
    expect(p.nextSize({ slots: 10, queued: 0, free: 10, lookahead: 2, paced: true })).toBe(14);
  });
});
