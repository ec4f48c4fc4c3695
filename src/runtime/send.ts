import { runWithTransitions, type Hooks, type Transition } from "../app/hooks.js";
import type { Db } from "../db/query.js";

/**
 * The engine's statements (claims, settles) with the transition hooks: `runWithTransitions` with hook
 * failures recorded on their own job, never rolling back the other jobs the statement moved, and the hooks
 * waited for no longer than what is left of the budget (`remainingMs`; MIN_HOOK_TIME_MS at least).
 */
export function sendWithTransitions<T>(db: Db, hooks: Hooks, run: (db: Db) => Promise<T>, transitions: (result: T) => Transition[],
  remainingMs?: () => number): Promise<T> {
  return runWithTransitions(db, hooks, run, transitions, "record", remainingMs);
}
