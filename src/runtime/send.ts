import { sql } from "drizzle-orm";
import type { Hooks, Transition } from "../app/hooks.js";
import { isNeonHttp, type Db } from "../db/driver.js";
import type { ErrorEntry } from "../core/errors.js";
import { clean } from "./storable.js";

/**
 * Sends one statement; with transition hooks registered it runs in a transaction so the hooks see the
 * change in its transaction (on neon-http, which has none, right after the statement commits). A hook that
 * throws affects only its own job's transition: its writes are undone (each call runs in a savepoint), the
 * change itself stands, and the failure is appended to that job's errors. It never rolls back, or blocks,
 * the changes of other jobs, claims or recovery.
 */
export async function sendWithTransitions<T>(db: Db, hooks: Hooks, run: (db: Db) => Promise<T>, transitions: (result: T) => Transition[]): Promise<T> {
  if (hooks.transition.length === 0) return run(db);
  if (isNeonHttp(db)) {
    const result = await run(db);
    const failures = await callHooks(hooks, transitions(result), db, false);
    await recordHookFailures(db, failures).catch(() => {}); // the change is committed; a lost note must not undo the summary
    return result;
  }
  return db.transaction(async (tx) => {
    const result = await run(tx as unknown as Db);
    await recordHookFailures(tx as unknown as Db, await callHooks(hooks, transitions(result), tx as unknown as Db, true));
    return result;
  });
}

interface HookFailure { transition: Transition; error: unknown }

async function callHooks(hooks: Hooks, transitions: Transition[], tx: Db, savepoints: boolean): Promise<HookFailure[]> {
  const failures: HookFailure[] = [];
  for (const transition of transitions) {
    for (const hook of hooks.transition) {
      try {
        if (savepoints) await tx.transaction(async (sp) => { await hook(transition, sp as unknown as Db); });
        else await hook(transition, tx);
      } catch (error) {
        failures.push({ transition, error });
      }
    }
  }
  return failures;
}

/** Appends each failed hook call to its job's errors, in one statement. */
async function recordHookFailures(db: Db, failures: HookFailure[]): Promise<void> {
  if (failures.length === 0) return;
  const entries = failures.map(({ transition: t, error }) => ({ id: t.jobId, entry: hookErrorEntry(t, error) }));
  await db.execute(sql`update akadze.jobs j set errors = j.errors || f.entries
    from (select (e->>'id')::bigint as id, jsonb_agg(e->'entry') as entries
          from jsonb_array_elements(${JSON.stringify(entries)}::jsonb) e group by 1) f
    where j.id = f.id`);
}

function hookErrorEntry(t: Transition, error: unknown): ErrorEntry {
  let message: string;
  let stack: string | null = null;
  try {
    message = error instanceof Error ? error.message : String(error);
    stack = error instanceof Error ? error.stack ?? null : null;
  } catch {
    message = "a value that cannot be turned into text";
  }
  return {
    attempt: t.attempt, at: new Date().toISOString(), kind: "TransitionHookFailed",
    message: clean(`an onTransition hook threw on ${t.from} -> ${t.to}: ${message}`).slice(0, 16_384), stack: stack === null ? null : clean(stack).slice(0, 16_384),
  };
}

/** A state change the database reported as `{ id, task, queue, attempt, from, to }`. */
export function transitionOf(t: { id: number | string; task: string; queue: string; attempt: number; from: string; to: string }, error?: Transition["error"]): Transition {
  return { jobId: Number(t.id), task: t.task, queue: t.queue, from: t.from as Transition["from"], to: t.to as Transition["to"], attempt: t.attempt, ...(error ? { error } : {}) };
}
