// A job's local life in one engine (issue 23, item 1), driven without Postgres: held, queued in claim order,
// its start asked and answered, its body running, its outcome settling, and what a claim that hands it back
// means.
import { describe, expect, it } from "vitest";
import { HeldJobs } from "../src/runtime/held-jobs.js";
import type { ClaimedJob } from "../src/sql/claim.js";
import type { StartResult } from "../src/sql/start.js";
import type { Outcome } from "../src/sql/settle.js";

/** A start answer that started `ids` (the rest of the request was stopped, denied or not ours). */
const startedOnly = (...ids: number[]): StartResult => ({ started: ids, slack: null, stopped: [], denied: [] });
const SENT = { clock: 0, mono: 0 };
const succeeded = (id: number): Outcome => ({ id, kind: "succeeded", result: null, attempt: 1 });
/** A settle of these outcomes answered, applying them all. */
const applied = (jobs: HeldJobs, ...ids: number[]) => jobs.settleAnswered(ids.map(succeeded), ids.map((id) => ({ id, to: "succeeded" })), false, false);

const job = (id: number, o: Partial<ClaimedJob> = {}): ClaimedJob =>
  ({ id, task: "t", queue: "default", args: {}, attempt: 1, max_attempts: 3, priority: 0, started: false, limited: false, ...o });

/** The ids `takeReady` gives, in order, until it gives none. */
function drainReady(jobs: HeldJobs): number[] {
  const ids: number[] = [];
  for (let l = jobs.takeReady(); l; l = jobs.takeReady()) ids.push(l.job.id);
  return ids;
}

describe("held jobs", () => {
  it("a job the claim started is ready at once; one it did not waits for a start answer", () => {
    const jobs = new HeldJobs();
    jobs.admit(job(1, { started: true }));
    jobs.admit(job(2));
    expect(jobs.queued).toBe(2);
    expect(drainReady(jobs)).toEqual([1]);
    const asked = jobs.pickStarts(4, 0).map((l) => l.job.id);
    expect(asked).toEqual([2]);
    jobs.answerStarts(asked, startedOnly(2), SENT);
    expect(drainReady(jobs)).toEqual([2]);
    expect(jobs.queued).toBe(0);
  });

  it("ready jobs start in claim order: none overtakes a job whose start answer is on its way", () => {
    const jobs = new HeldJobs();
    jobs.admit(job(1));
    jobs.pickStarts(1, 0); // 1 is asked for
    jobs.admit(job(2, { started: true })); // a later claim started 2 itself
    expect(jobs.takeReady()).toBeUndefined();
    jobs.answerStarts([1], startedOnly(1), SENT);
    expect(drainReady(jobs)).toEqual([1, 2]);
  });

  it("a job denied its start is no longer held", () => {
    const jobs = new HeldJobs();
    jobs.admit(job(1, { limited: true }));
    jobs.admit(job(2, { limited: true }));
    // A limited job is asked for only into a free slot.
    expect(jobs.pickStarts(1, 5).map((l) => l.job.id)).toEqual([1]);
    jobs.answerStarts([1], startedOnly(), SENT);
    expect(jobs.controllerOf(1)).toBeUndefined();
    expect(jobs.queued).toBe(1);
    expect(jobs.known()).toEqual([2]);
  });

  it("a job handed back while it waits replaces its waiting copy, with a fresh controller", () => {
    const jobs = new HeldJobs();
    jobs.admit(job(1, { attempt: 1 }));
    const first = jobs.controllerOf(1)!;
    first.abort(new Error("lease lost"));
    jobs.admit(job(1, { attempt: 2, started: true }));
    expect(jobs.queued).toBe(1);
    expect(jobs.controllerOf(1)).not.toBe(first);
    expect(jobs.controllerOf(1)!.aborted).toBe(false);
    expect(jobs.takeReady()!.job.attempt).toBe(2);
  });

  it("a job handed back while its body runs, or while its outcome is on its way, is not queued again", () => {
    const jobs = new HeldJobs();
    jobs.admit(job(1, { started: true }));
    jobs.takeReady();
    jobs.bodyStarted(1);
    jobs.admit(job(1, { started: true }));
    expect(jobs.queued).toBe(0);
    expect(jobs.running).toBe(1);
    jobs.bodyEnded(1);
    jobs.outcomeSent(1);
    jobs.admit(job(1, { started: true }));
    expect(jobs.queued).toBe(0);
    expect(jobs.known()).toEqual([1]);
    applied(jobs, 1);
    expect(jobs.known()).toEqual([]);
  });

  it("a copy from a claim sent before the job ended for good is stale until that claim is answered", () => {
    const jobs = new HeldJobs();
    jobs.endedForGood(1, true);
    jobs.admit(job(1, { started: true }));
    expect(jobs.queued).toBe(0);
    jobs.claimAnswered();
    jobs.admit(job(1, { started: true }));
    expect(jobs.queued).toBe(1);
    // Ended while no claim was on its way: nothing to remember.
    jobs.endedForGood(2, false);
    jobs.admit(job(2));
    expect(jobs.queued).toBe(2);
  });

  it("takeUnstarted leaves a job whose start answer is on its way, and what it takes is no longer held", () => {
    const jobs = new HeldJobs();
    for (const id of [1, 2, 3]) jobs.admit(job(id, { task: id === 3 ? "slow" : "t" }));
    jobs.pickStarts(1, 0); // 1 is asked for
    expect(jobs.takeUnstarted((j) => j.task === "slow").map((j) => j.id)).toEqual([3]);
    expect(jobs.takeUnstarted().map((j) => j.id)).toEqual([2]);
    expect(jobs.known()).toEqual([1]);
    expect(jobs.queued).toBe(1);
  });

  it("a job whose body ran stays known until an answer to its outcome: a lost settle leaves it to its lease", () => {
    const jobs = new HeldJobs();
    for (const id of [1, 2, 3]) { jobs.admit(job(id, { started: true })); jobs.takeReady(); jobs.bodyStarted(id); }
    for (const id of [1, 2]) { jobs.bodyEnded(id); jobs.outcomeSent(id); }
    jobs.bodyEnded(3);
    jobs.endedForGood(3, false); // its body completed it in its own transaction
    jobs.outcomesLost([{ id: 1 }]);
    applied(jobs, 2);
    expect(jobs.known()).toEqual([1]);
    // Recovered by a later claim, run and answered: no longer in question.
    jobs.admit(job(1, { attempt: 2, started: true }));
    jobs.takeReady();
    jobs.bodyStarted(1);
    jobs.bodyEnded(1);
    jobs.outcomeSent(1);
    expect(jobs.known()).toEqual([1]);
    applied(jobs, 1);
    expect(jobs.known()).toEqual([]);
  });

  it("an outcome a settle found not ours while a claim was on its way is sent again if that claim hands the job back", () => {
    const jobs = new HeldJobs();
    for (const id of [1, 2]) { jobs.admit(job(id, { started: true })); jobs.takeReady(); jobs.bodyStarted(id); jobs.bodyEnded(id); jobs.outcomeSent(id); }
    // The settle ran before the claim committed: neither applied; the claim on its way takes 1 back, not 2.
    expect(jobs.settleAnswered([succeeded(1), succeeded(2)], [], false, true)).toEqual({ again: [], kept: 2, unheld: false });
    // Sent again for the attempt the claim's run has (the settle applies an outcome to its own attempt only).
    expect(jobs.admit(job(1, { attempt: 2, started: true }))).toEqual({ ...succeeded(1), attempt: 2 });
    expect(jobs.queued).toBe(0);
    expect(jobs.claimAnswered()).toBe(1); // 2's outcome is lost: its job is another owner's
    expect(jobs.known()).toEqual([1]);
    // With no claim on its way, or when an earlier try may have recorded it, nothing is kept.
    jobs.outcomeSent(1);
    expect(jobs.settleAnswered([succeeded(1)], [], false, false)).toEqual({ again: [], kept: 0, unheld: false });
    expect(jobs.known()).toEqual([]);
  });

  it("a job handed back while its outcome is on its way gets that outcome again if the settle found it not ours", () => {
    const jobs = new HeldJobs();
    for (const id of [1, 2]) { jobs.admit(job(id, { started: true })); jobs.takeReady(); jobs.bodyStarted(id); jobs.bodyEnded(id); jobs.outcomeSent(id); }
    expect(jobs.admit(job(1, { attempt: 2, started: true }))).toBeUndefined();
    expect(jobs.admit(job(2, { attempt: 2, started: true }))).toBeUndefined();
    expect(jobs.queued).toBe(0);
    jobs.claimAnswered();
    // 1 was applied (a plain success is sent without its attempt, so it may have ended the row the claim took
    // back); 2 was not, and goes again, for the attempt the claim gave it. 1's copy was not queued: in case the
    // settle ended an earlier run and the claim's is held by no one, the release of unheld jobs looks.
    expect(jobs.settleAnswered([succeeded(1), succeeded(2)], [{ id: 1, to: "succeeded" }], false, false))
      .toEqual({ again: [{ ...succeeded(2), attempt: 2 }], kept: 0, unheld: true });
    jobs.outcomeSent(2);
    expect(jobs.known()).toEqual([2]);
    // An unsure answer is not sent again: the lost try may have recorded it.
    expect(jobs.settleAnswered([succeeded(2)], [], true, false)).toEqual({ again: [], kept: 0, unheld: false });
    expect(jobs.known()).toEqual([]);
  });

  it("a job handed back while the outcome that made it due again was on its way is left to the release of unheld jobs", () => {
    const retry = (id: number): Outcome => ({ id, kind: "error", attempt: 1, delayMs: 0 });
    const ran = (jobs: HeldJobs, id: number) => { jobs.admit(job(id, { started: true })); jobs.takeReady(); jobs.bodyStarted(id); jobs.bodyEnded(id); jobs.outcomeSent(id); };
    // The settle requeued the job due at once; a claim took that run before the settle's answer came.
    const recorded = new HeldJobs();
    ran(recorded, 1);
    expect(recorded.admit(job(1, { attempt: 2, started: true }))).toBeUndefined();
    expect(recorded.queued).toBe(0);
    expect(recorded.settleAnswered([retry(1)], [{ id: 1, to: "queued" }], false, false)).toEqual({ again: [], kept: 0, unheld: true });
    expect(recorded.known()).toEqual([]);
    // A retried settle whose first try committed: the retry finds a later attempt and records nothing.
    const retried = new HeldJobs();
    ran(retried, 1);
    retried.admit(job(1, { attempt: 2, started: true }));
    expect(retried.settleAnswered([retry(1)], [], true, false)).toEqual({ again: [], kept: 0, unheld: true });
    expect(retried.known()).toEqual([]);
    // No answer at all: the claim's lease is what holds the job now.
    const unanswered = new HeldJobs();
    ran(unanswered, 1);
    ran(unanswered, 2);
    unanswered.admit(job(1, { attempt: 2, started: true }));
    expect(unanswered.outcomesLost([{ id: 1 }, { id: 2 }])).toBe(true);
    expect(unanswered.known()).toEqual([2]);
    // Nothing handed back: nothing unheld.
    const plain = new HeldJobs();
    ran(plain, 1);
    expect(plain.settleAnswered([retry(1)], [{ id: 1, to: "queued" }], false, false).unheld).toBe(false);
    expect(plain.outcomesLost([])).toBe(false);
  });
});
