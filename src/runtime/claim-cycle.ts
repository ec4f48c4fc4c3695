/**
 * The engine's claim cycle as one explicit phase and a pure transition function: what the engine may do
 * next about claiming, decided from the phase and one event, with no Postgres, timer or promise involved
 * (test/claim-cycle.test.ts drives it alone).
 *
 *   open ──sent──▶ claiming ──answered (more may be due)──▶ open
 *                     │ ──answered (short, or drain: false)──▶ exhausted
 *                     └──failed──▶ backoff (an invocation) ──retryDue──▶ open
 *                                  exhausted (a worker lane, or no budget left for a retry)
 *   exhausted ──quiet, after bodies ended that may have enqueued more──▶ open (an invocation, once)
 *   exhausted ──idleBegan──▶ idling ──idleEnded(again)──▶ open
 *                                     ──idleEnded(end)──▶ ended
 *
 * A stop (budget spent, signal aborted) is not a phase: the engine releases what waits and ends once nothing
 * runs and no claim is on its way, whatever the phase.
 */

/** Where the claim cycle stands. */
export type ClaimPhase =
  /** May claim once the local queue runs low. */
  | "open"
  /** A claim is on its way. */
  | "claiming"
  /** A later claim failed: the next one waits for a short timer (`retryDue`). */
  | "backoff"
  /** The last claim found everything claimable for now (or this was the one claim asked for). */
  | "exhausted"
  /** A worker lane waits for a wake-up or its next poll. */
  | "idling"
  /** No more claims: the engine ends once nothing runs. */
  | "ended";

export interface ClaimCycle {
  phase: ClaimPhase;
  /** The claim that exhausted the cycle was sent while jobs ran or waited: once they end, one more claim may find what they enqueued. */
  lookAgain: boolean;
  /** A claim could not be sent: no task's timeout fits the remaining budget (it only shrinks, so no claim will). */
  noTaskFits: boolean;
}

export type ClaimEvent =
  | { kind: "sent" }
  /**
   * A claim's answer. `short`: it took fewer jobs than it asked for; `more`: jobs it could not see may be due
   * (the schedules or recovery in its own statement made some, or a size cap left some); `busy`: jobs ran or
   * waited locally when it was sent.
   */
  | { kind: "answered"; short: boolean; more: boolean; noTaskFits: boolean; busy: boolean }
  /** A claim failed; `retry`: the policy retries and the budget has room for the backoff. */
  | { kind: "failed"; retry: boolean }
  | { kind: "retryDue" }
  /** Nothing runs, waits or settles locally; `endedSinceClaim`: jobs that ended since the last claim was sent. */
  | { kind: "quiet"; endedSinceClaim: number }
  | { kind: "idleBegan" }
  | { kind: "idleEnded"; again: boolean };

/** What a claim policy tells the transition function. */
export interface CycleRules {
  /** Claim again while work is due; false: exactly one claim. */
  drain: boolean;
  /** An exhausted cycle waits for work (a worker lane) instead of ending (an invocation). */
  idles: boolean;
}

/** A new engine's claim cycle: open, nothing learnt yet. */
export const NEW_CYCLE: ClaimCycle = { phase: "open", lookAgain: false, noTaskFits: false };

/** The next state of the cycle after `event`; an event that does not apply in the phase leaves it as it is. */
export function nextCycle(state: ClaimCycle, event: ClaimEvent, rules: CycleRules): ClaimCycle {
  if (state.phase === "ended") return state;
  switch (event.kind) {
    case "sent":
      return state.phase === "open" ? { ...state, phase: "claiming" } : state;
    case "answered": {
      if (state.phase !== "claiming") return state;
      const noTaskFits = state.noTaskFits || event.noTaskFits;
      if (!rules.drain || event.noTaskFits || (event.short && !event.more)) return { phase: "exhausted", lookAgain: event.busy, noTaskFits };
      return { ...state, phase: "open", noTaskFits };
    }
    case "failed":
      if (state.phase !== "claiming") return state;
      return { ...state, phase: event.retry && !rules.idles ? "backoff" : "exhausted", lookAgain: false };
    case "retryDue":
      return state.phase === "backoff" ? { ...state, phase: "open" } : state;
    case "quiet":
      // One more look for an invocation whose short claim went out while bodies ran that have ended since.
      if (state.phase === "exhausted" && !rules.idles && rules.drain && state.lookAgain && event.endedSinceClaim > 0 && !state.noTaskFits) {
        return { ...state, phase: "open", lookAgain: false };
      }
      return state;
    case "idleBegan":
      return state.phase === "exhausted" && rules.idles ? { ...state, phase: "idling" } : state;
    case "idleEnded":
      if (state.phase !== "idling") return state;
      return { ...state, phase: event.again ? "open" : "ended" };
  }
}
