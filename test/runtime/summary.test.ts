// The invocation summary counts itself (summary.ts): each event is one method, the totals are derived, and a
// worker lane takes one summary per cycle. Pure: no database.
import { describe, expect, it } from "vitest";
import { countsAnything, jobsEnded, Summary } from "../../src/runtime/summary.js";
import type { ClaimResult } from "../../src/sql/claim/claim-answer.js";
import type { CompletedJob } from "../../src/sql/settle/settle.js";

const moved = (id: number) => ({ id, task: "t", queue: "q", attempt: 1, from: "queued", to: "running" });
const claimed = (id: number) => ({ id, task: "t", queue: "q", args: {}, attempt: 1, max_attempts: 3, priority: 0, started: false, limited: false });
const claim = (o: Partial<ClaimResult>): ClaimResult =>
  ({ claimed: [], recovered: [], cancelled: [], rateLimited: [], tooLarge: [], more: false, limits: false, stops: false, fair: false, ...o });
const boom = { kind: "Error", message: "boom" };
const done = (id: number, to: string, kind: CompletedJob["kind"], error: CompletedJob["error"] = null): CompletedJob =>
  ({ id, task: "t", queue: "q", attempt: 1, from: "running", to, kind, error });

describe("an engine's summary", () => {
  it("counts a claim, a start's answer and a settle's answer, each run by its outcome, and lists failed and retried runs", () => {
    const s = new Summary("inv-1");
    s.roundTrip();
    s.claimed(claim({ claimed: [claimed(1), claimed(2), claimed(3)], recovered: [moved(9)], rateLimited: [moved(8)], tooLarge: [moved(7)], cancelled: [moved(6)] }));
    s.roundTrip();
    s.startAnswered({ started: [1], slack: null, stopped: [moved(2)], denied: [moved(3), moved(4)] });
    s.settled([done(1, "succeeded", "succeeded"), done(10, "failed", "fail", boom), done(11, "queued", "error", boom),
      done(12, "queued", "snooze", boom), done(13, "queued", "release"), done(14, "cancelled", "cancel")], 7, 1, false);
    s.completedAlone();
    s.abandoned();
    s.releasedUnheld(2);
    const taken = s.take();
    expect(taken).toMatchObject({
      id: "inv-1", claimed: 3, recovered: 1, rateLimited: 1, roundTrips: 2,
      succeeded: 2, failed: 2, retried: 1, snoozed: 1, cancelled: 3, released: 5, abandoned: 1, lost: 1, unconfirmed: 0,
    });
    // A snoozed run is no problem, however it was told; the too-large job failed in the claim, with no run.
    expect(taken.problems.map((p) => [p.jobId, p.to])).toEqual([[10, "failed"], [11, "queued"]]);
    expect(jobsEnded(taken)).toBe(2 + 2 + 1 + 1 + 3);
  });

  it("counts the outcomes an unsure settle did not move as unconfirmed, not lost", () => {
    const s = new Summary("inv-2");
    s.settled([done(1, "succeeded", "succeeded")], 3, 2, true);
    s.unanswered(1, 4);
    expect(s.take()).toMatchObject({ succeeded: 1, lost: 1, unconfirmed: 2 + 4 });
  });

  it("hands over what it counted once: a lane's next cycle starts from zero, and keeps what the engine's end said", () => {
    const s = new Summary("wrk-1");
    s.claimed(claim({ claimed: [claimed(1)] }));
    s.settled([done(1, "failed", "fail", boom)], 1, 0, false);
    expect(s.take()).toMatchObject({ claimed: 1, failed: 1, problems: [{ jobId: 1 }] });
    s.roundTrip();
    s.ended(1234, ["slow"]);
    const next = s.take();
    expect(next).toMatchObject({ claimed: 0, failed: 0, problems: [], roundTrips: 1, durationMs: 1234, tooLongForBudget: ["slow"] });
    expect(countsAnything(next)).toBe(false); // round trips alone are no news for onInvocation
  });

  it("adds a worker's lane cycles into its totals, counting the cycles", () => {
    const lane = new Summary("wrk-2");
    const totals = new Summary("wrk-2");
    lane.settled([done(1, "succeeded", "succeeded"), done(2, "queued", "error", boom)], 2, 0, false);
    totals.add(lane.take());
    lane.settled([done(3, "succeeded", "succeeded")], 1, 0, false);
    lane.startAnswered({ started: [], slack: null, stopped: [], denied: [moved(4)] });
    totals.add(lane.take());
    totals.add(lane.take()); // a cycle that did nothing still counts as one
    expect(totals.cycles).toBe(3);
    expect(totals.jobsEnded).toBe(3);
    expect(totals.take()).toMatchObject({ succeeded: 2, retried: 1, released: 1 });
  });

  it("adds what fan-out did to the invocation's round trips", () => {
    const s = new Summary("inv-3");
    s.roundTrip();
    const report = { slot: 1, chain: "inv-3", generation: 0, backlog: 4, started: [], successor: null };
    s.fannedOut(report, 3);
    expect(s.take()).toMatchObject({ roundTrips: 4, fanOut: report });
  });
});
