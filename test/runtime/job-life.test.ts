// A job's local life in one engine, one state and a pure transition function (src/runtime/job-life.ts), driven without
// Postgres: every row is a state, an event and what must follow, among them the races of a claim handing a job back
// while it runs or settles, a late start answer and an unanswered outcome; and held jobs start in claim order.
import { describe, expect, it } from "vitest";
import { nextLife, type JobLife, type LifeEvent, type LifeState } from "../../src/runtime/job-life.js";
import { HeldJobs } from "../../src/runtime/held-jobs.js";
import { JobAbort } from "../../src/runtime/signal.js";
import type { ClaimedJob } from "../../src/sql/claim/claim-answer.js";
import type { Outcome } from "../../src/sql/settle/settle.js";

const job = (id: number, o: Partial<ClaimedJob> = {}): ClaimedJob =>
  ({ id, task: "t", queue: "default", args: {}, attempt: 1, max_attempts: 3, priority: 0, started: false, limited: false, ...o });
const A = new JobAbort();
const B = new JobAbort();
const run1 = job(1);
const run2 = job(1, { attempt: 2 });
const done: Outcome = { id: 1, kind: "succeeded", attempt: 1 };
const release: Outcome = { id: 1, kind: "release", attempt: 1 };
const life = (state: LifeState, extra: Partial<JobLife> = {}): JobLife => ({ state, job: run1, controller: A, ...extra });
const parked = { job: run2, controller: B };

type Row = [name: string, before: JobLife | undefined, event: LifeEvent, after: JobLife | undefined | "ignored", lost?: boolean];

const rows: Row[] = [
  ["a claim holds a job it did not start as waiting", undefined, { kind: "claimed", job: run1, controller: A }, life("waiting")],
  ["a claim that started a job makes it ready", undefined, { kind: "claimed", job: job(1, { started: true }), controller: A }, { state: "ready", job: job(1, { started: true }), controller: A }],
  ["a waiting job asked to start is requested", life("waiting"), { kind: "startAsked" }, life("requested")],
  ["a start answer that started it makes it ready", life("requested"), { kind: "startAnswered", started: true }, life("ready")],
  ["a token's deadline rides along", life("requested"), { kind: "startAnswered", started: true, runBy: { clock: 5, mono: 6 } }, life("ready", { runBy: { clock: 5, mono: 6 } })],
  ["denied, stopped or not ours: no longer held", life("requested"), { kind: "startAnswered", started: false }, undefined],
  ["a start answer for a job not asked about changes nothing", life("waiting"), { kind: "startAnswered", started: true }, "ignored"],
  ["a late start answer after the job left changes nothing", undefined, { kind: "startAnswered", started: true }, "ignored"],
  ["a ready job's body starts", life("ready"), { kind: "bodyBegan" }, life("running")],
  ["a body cannot start before its start was answered", life("requested"), { kind: "bodyBegan" }, "ignored"],
  ["a body that ended sends its outcome", life("running"), { kind: "bodyEnded", outcome: done }, life("settling", { outcome: done })],
  ["a body that completed itself (completeTx) ends its life", life("running"), { kind: "bodyEnded", outcome: null }, undefined],
  ["a waiting job released at the end settles its release", life("waiting"), { kind: "notRun", outcome: release }, life("settling", { outcome: release })],
  ["a ready job that missed its token's deadline is released", life("ready"), { kind: "notRun", outcome: release }, life("settling", { outcome: release })],
  ["a job whose start is on its way is not released (the answer decides)", life("requested"), { kind: "notRun", outcome: release }, "ignored"],
  ["a running body is never released", life("running"), { kind: "notRun", outcome: release }, "ignored"],
  ["a recorded outcome ends the life", life("settling", { outcome: done }), { kind: "settled", recorded: true }, undefined],
  ["an outcome the database did not take (not our run) ends it, lost", life("settling", { outcome: done }), { kind: "settled", recorded: false }, undefined, true],
  ["an unanswered settle keeps the outcome", life("settling", { outcome: done }), { kind: "settleLost", unsure: true }, life("unsettled", { outcome: done, unsure: true })],
  ["a kept outcome is sent again", life("unsettled", { outcome: done, unsure: true }), { kind: "resent" }, life("settling", { outcome: done, unsure: true })],
  ["a duplicate settle answer changes nothing", undefined, { kind: "settled", recorded: true }, "ignored"],
  // A claim of the same engine hands the job back:
  ["while it waited (its lease lapsed and came back): the claim's copy is the run", life("waiting"), { kind: "claimed", job: run2, controller: B }, { state: "waiting", job: run2, controller: B }],
  ["while its start was on its way: the answer decides, for the new copy", life("requested"), { kind: "claimed", job: run2, controller: B }, { state: "requested", job: run2, controller: B }],
  ["while its body runs: the copy is parked, never a second body", life("running"), { kind: "claimed", job: run2, controller: B }, life("running", { next: parked })],
  ["while its outcome is on its way: parked", life("settling", { outcome: done }), { kind: "claimed", job: run2, controller: B }, life("settling", { outcome: done, next: parked })],
  ["while its outcome went unanswered: parked", life("unsettled", { outcome: done }), { kind: "claimed", job: run2, controller: B }, life("unsettled", { outcome: done, next: parked })],
  ["the parked copy waits for a start statement once the outcome is answered", life("settling", { outcome: done, next: parked }), { kind: "settled", recorded: true }, { state: "waiting", job: run2, controller: B }],
  ["the parked copy also follows an outcome that was not ours", life("settling", { outcome: done, next: parked }), { kind: "settled", recorded: false }, { state: "waiting", job: run2, controller: B }, true],
  ["the parked copy follows a body that completed itself", life("running", { next: parked }), { kind: "bodyEnded", outcome: null }, { state: "waiting", job: run2, controller: B }],
  ["a body that ended with a copy parked settles first", life("running", { next: parked }), { kind: "bodyEnded", outcome: done }, life("settling", { outcome: done, next: parked })],
];

describe("a job's local life", () => {
  it.each(rows)("%s", (_name, before, event, after, lost) => {
    const step = nextLife(before, event);
    if (after === "ignored") {
      expect(step.ignored).toBe(true);
      expect(step.life).toBe(before);
    } else {
      expect(step.ignored).toBeUndefined();
      expect(step.life).toEqual(after);
      expect(step.lost === true).toBe(lost === true);
    }
  });

  it("no state has two bodies: a claim never turns a running or settling life into a queued one", () => {
    for (const state of ["running", "settling", "unsettled"] as const) {
      const step = nextLife(life(state, state === "running" ? {} : { outcome: done }), { kind: "claimed", job: run2, controller: B });
      expect(step.life?.state).toBe(state);
    }
  });
});

/** The ids `nextReady` gives, in order, starting each, until it gives none. */
function startReady(jobs: HeldJobs): number[] {
  const ids: number[] = [];
  for (let r = jobs.nextReady(); r; r = jobs.nextReady()) {
    jobs.apply(r.job.id, { kind: "bodyBegan" });
    ids.push(r.job.id);
  }
  return ids;
}
const started = (...ids: number[]) => ({ started: ids, slack: null, stopped: [], denied: [] });
const SENT = { clock: 0, mono: 0 };

describe("held jobs", () => {
  it("jobs start strictly in claim order: a ready job never overtakes one whose start is still to be asked or answered", () => {
    const jobs = new HeldJobs();
    jobs.admit(job(1));
    jobs.admit(job(2, { started: true }));
    expect(startReady(jobs)).toEqual([]);
    expect(jobs.pickStarts(1, 0).map((j) => j.id)).toEqual([1]);
    expect(startReady(jobs)).toEqual([]);
    jobs.answerStarts([1], started(1), SENT);
    expect(startReady(jobs)).toEqual([1, 2]);
    expect(jobs.running).toBe(2);
  });

  it("the first queued job is asked for even when it is limited and ready jobs wait behind it", () => {
    const jobs = new HeldJobs();
    jobs.admit(job(1, { limited: true }));
    jobs.admit(job(2, { started: true }));
    jobs.admit(job(3, { started: true }));
    // Two jobs are ready, so no slot counts as free for a limited job, but everything waits for the first.
    expect(jobs.pickStarts(1, 0).map((j) => j.id)).toEqual([1]);
    jobs.answerStarts([1], started(), SENT);
    expect(startReady(jobs)).toEqual([2, 3]);
    expect(jobs.known()).toEqual([2, 3]);
  });

  it("a copy handed back while the body runs waits for its outcome's answer, then for a start statement", () => {
    const jobs = new HeldJobs();
    jobs.admit(job(1, { started: true }));
    expect(startReady(jobs)).toEqual([1]);
    jobs.admit(job(1, { attempt: 2, started: true }));
    expect(jobs.queued).toBe(0);
    expect(startReady(jobs)).toEqual([]);
    const outcome: Outcome = { id: 1, kind: "snooze", attempt: 1, delayMs: 0 };
    jobs.apply(1, { kind: "bodyEnded", outcome });
    expect(jobs.held().has(1)).toBe(true); // the parked copy's lease is renewed
    expect(jobs.settleAnswered([{ ...outcome }], [{ id: 1 }], false)).toBe(0);
    expect(jobs.lifeOf(1)).toMatchObject({ state: "waiting", job: { attempt: 2 } });
    expect(jobs.pickStarts(1, 0).map((j) => j.attempt)).toEqual([2]);
  });

  it("an unanswered settle keeps its outcomes and sends them again; still unanswered at the end they count", () => {
    const jobs = new HeldJobs();
    jobs.admit(job(1, { started: true }));
    startReady(jobs);
    jobs.apply(1, { kind: "bodyEnded", outcome: done });
    jobs.settleLost([{ ...done }], false);
    expect(jobs.unsettled).toBe(1);
    expect(jobs.known()).toEqual([1]); // a release of unheld jobs leaves it alone
    expect(jobs.held().size).toBe(0); // its lease is not renewed: its body ended
    expect(jobs.resend()).toEqual([done]);
    jobs.settleLost([{ ...done }], true);
    expect(jobs.unconfirmed()).toEqual({ lost: 0, unsure: 1 });
  });
});

describe("an outcome sent again", () => {
  it("counts as recorded when the statement that went unanswered may have recorded it", () => {
    const jobs = new HeldJobs();
    jobs.admit(job(1, { started: true }));
    startReady(jobs);
    jobs.apply(1, { kind: "bodyEnded", outcome: done });
    jobs.settleLost([{ ...done }], true);
    expect(jobs.resend()).toEqual([done]);
    // The next statement finds it moved already (by the unanswered one): not lost.
    expect(jobs.settleAnswered([{ ...done }], [], false)).toBe(0);
    expect(jobs.lifeOf(1)).toBeUndefined();
  });
});
