import { runWithTransitions, type Hooks, type Transition } from "../app/hooks.js";
import type { Db } from "../db/query.js";

/**
 * The engine's statements (claims, settles) with the transition hooks: `runWithTransitions` with hook
 * failures recorded on their own job, never rolling back the other jobs the statement moved.
 */
export function sendWithTransitions<T>(db: Db, hooks: Hooks, run: (db: Db) => Promise<T>, transitions: (result: T) => Transition[]): Promise<T> {
  return runWithTransitions(db, hooks, run, transitions, "record");
}

/** A state change the database reported as `{ id, task, queue, attempt, from, to }`. */
export function transitionOf(t: { id: number | string; task: string; queue: string; attempt: number; from: string; to: string }, error?: Transition["error"]): Transition {
  return { jobId: Number(t.id), task: t.task, queue: t.queue, from: t.from as Transition["from"], to: t.to as Transition["to"], attempt: t.attempt, ...(error ? { error } : {}) };
}
