import type { ClaimedJob } from "../sql/claim/claim-answer.js";
import type { Outcome } from "../sql/settle/settle.js";
import type { JobAbort } from "./signal.js";

/**
 * Where one job stands in the engine that holds it. A job has one life per engine at a time:
 * - `waiting`: claimed (leased to this engine), not started; no attempt spent yet.
 * - `requested`: a statement is on its way to mark it started (and take its limit slot and token).
 * - `ready`: marked started (its attempt is spent), waiting for a free slot.
 * - `running`: its body runs (past its timeout too, until it ends: job-runs.ts).
 * - `settling`: its outcome (or, never run, its release) is on its way to the database.
 * - `unsettled`: that statement went unanswered; the outcome is sent again with a later one.
 */
export type LifeState = "waiting" | "requested" | "ready" | "running" | "settling" | "unsettled";

/** A claim's copy of a job that arrived while this engine still ran or settled an earlier run of it. */
export interface ParkedCopy { job: ClaimedJob; controller: JobAbort }

export interface JobLife {
  readonly state: LifeState;
  /** The run this life is about: its attempt is the one its outcome ends. */
  readonly job: ClaimedJob;
  /** What its body gets as `job.signal`; the heartbeat aborts it on a cancel request or a lost lease. */
  readonly controller: JobAbort;
  /** `ready` with a `maxStarts` token: the latest moment its body may begin (local and monotonic ms). */
  readonly runBy?: { clock: number; mono: number };
  /** `settling`, `unsettled`: what is recorded. */
  readonly outcome?: Outcome;
  /** `unsettled`: an unanswered try may have committed. */
  readonly unsure?: boolean;
  /**
   * A later claim of this engine took the job again while this run was still running or settling (its
   * outcome committed first and made it due at once, or its lease lapsed and another engine recovered it).
   * That copy waits here: one job never has two lives in one engine, so never two bodies.
   */
  readonly next?: ParkedCopy;
}

export type LifeEvent =
  /** A claim handed the job to this engine, under a fresh controller. */
  | { kind: "claimed"; job: ClaimedJob; controller: JobAbort }
  | { kind: "startAsked" }
  /** The start statement answered: `started` (ready for a slot) or not (denied, stopped, not ours, failed). */
  | { kind: "startAnswered"; started: boolean; runBy?: { clock: number; mono: number } }
  | { kind: "bodyBegan" }
  /** The body ended: its outcome to record, or null when it recorded itself (completeTx, completeBatch). */
  | { kind: "bodyEnded"; outcome: Outcome | null }
  /** A job that never ran goes back (release) or is cancelled before it ran. */
  | { kind: "notRun"; outcome: Outcome }
  /** Its settle was answered: `recorded` (the statement moved it, or an unanswered try may have). */
  | { kind: "settled"; recorded: boolean }
  | { kind: "settleLost"; unsure: boolean }
  | { kind: "resent" };

export interface LifeStep {
  /** The life after the event (undefined: the engine no longer holds the job). */
  life: JobLife | undefined;
  /** The event does not apply in this state (a late or duplicate answer): nothing changed. */
  ignored?: true;
  /** A settle found the run not this engine's any more (its lease lapsed and another engine took it): the outcome is lost. */
  lost?: true;
}

/**
 * A life with every field present (one object shape for all of them: an engine makes several per job, and
 * spreading lives of mixed shapes cost a tenth of a quick job's CPU).
 */
function lifeOf(state: LifeState, job: ClaimedJob, controller: JobAbort, o: Partial<JobLife> = {}): JobLife {
  return { state, job, controller, runBy: o.runBy, outcome: o.outcome, unsure: o.unsure, next: o.next };
}

/** The same life in another state (or with other fields). */
function moved(life: JobLife, state: LifeState, o: Partial<JobLife> = {}): JobLife {
  return lifeOf(state, o.job ?? life.job, o.controller ?? life.controller, {
    runBy: "runBy" in o ? o.runBy : life.runBy, outcome: "outcome" in o ? o.outcome : life.outcome,
    unsure: "unsure" in o ? o.unsure : life.unsure, next: "next" in o ? o.next : life.next,
  });
}

/** A life ends: the parked copy, if any, starts its own as `waiting` (a start statement confirms it is still ours). */
function end(life: JobLife): JobLife | undefined {
  return life.next ? lifeOf("waiting", life.next.job, life.next.controller) : undefined;
}

const ignored = (life: JobLife | undefined): LifeStep => ({ life, ignored: true });

/** The one way a job's local life moves: a pure function, tested table-driven (test/runtime/job-life.test.ts). */
export function nextLife(life: JobLife | undefined, event: LifeEvent): LifeStep {
  switch (event.kind) {
    case "claimed": {
      const fresh = lifeOf(event.job.started ? "ready" : "waiting", event.job, event.controller);
      if (!life) return { life: fresh };
      switch (life.state) {
        // Not started here: the claim's copy is the run now (the old lease lapsed and came back).
        case "waiting": case "ready": return { life: fresh };
        // Its start answer decides, for the row as it is now.
        case "requested": return { life: moved(life, "requested", { job: event.job, controller: event.controller }) };
        default: return { life: moved(life, life.state, { next: { job: event.job, controller: event.controller } }) };
      }
    }
    case "startAsked":
      return life?.state === "waiting" ? { life: moved(life, "requested") } : ignored(life);
    case "startAnswered":
      if (life?.state !== "requested") return ignored(life);
      return { life: event.started ? moved(life, "ready", { runBy: event.runBy }) : end(life) };
    case "bodyBegan":
      return life?.state === "ready" ? { life: moved(life, "running") } : ignored(life);
    case "bodyEnded":
      if (life?.state !== "running") return ignored(life);
      return { life: event.outcome ? moved(life, "settling", { outcome: event.outcome }) : end(life) };
    case "notRun":
      return life?.state === "waiting" || life?.state === "ready" ? { life: moved(life, "settling", { outcome: event.outcome }) } : ignored(life);
    case "settled":
      if (life?.state !== "settling") return ignored(life);
      return event.recorded ? { life: end(life) } : { life: end(life), lost: true };
    case "settleLost":
      return life?.state === "settling" ? { life: moved(life, "unsettled", { unsure: event.unsure || life.unsure === true }) } : ignored(life);
    case "resent":
      return life?.state === "unsettled" ? { life: moved(life, "settling") } : ignored(life);
  }
}

/** Held: leased to this engine for a run that has not ended (its heartbeat renews it). */
export function isHeld(life: JobLife): boolean {
  return life.state === "waiting" || life.state === "requested" || life.state === "ready" || life.state === "running";
}

/** Not started yet: in the local queue. */
export function isQueued(life: JobLife): boolean {
  return life.state === "waiting" || life.state === "requested" || life.state === "ready";
}
