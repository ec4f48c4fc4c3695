import { emitTransitions, type Hooks, type Transition } from "../app/hooks.js";
import { isNeonHttp, type Db } from "../db/driver.js";

/**
 * Sends one statement; with transition hooks registered it runs in a transaction so the hooks see the
 * change in its transaction (on neon-http, which has none, right after the statement commits).
 */
export async function sendWithTransitions<T>(db: Db, hooks: Hooks, run: (db: Db) => Promise<T>, transitions: (result: T) => Transition[]): Promise<T> {
  if (hooks.transition.length === 0) return run(db);
  if (isNeonHttp(db)) {
    const result = await run(db);
    await emitTransitions(hooks, transitions(result), db);
    return result;
  }
  return db.transaction(async (tx) => {
    const result = await run(tx as unknown as Db);
    await emitTransitions(hooks, transitions(result), tx as unknown as Db);
    return result;
  });
}

/** A state change the database reported as `{ id, task, queue, attempt, from, to }`. */
export function transitionOf(t: { id: number | string; task: string; queue: string; attempt: number; from: string; to: string }, error?: Transition["error"]): Transition {
  return { jobId: Number(t.id), task: t.task, queue: t.queue, from: t.from as Transition["from"], to: t.to as Transition["to"], attempt: t.attempt, ...(error ? { error } : {}) };
}
