import type { JobState } from "../core/states.js";
import { isNeonHttp, type Db } from "../db/driver.js";
import type { JobContext } from "./task.js";

/** A job as hooks see it: its context plus its args. @example app.hooks.beforeRun((job: HookJob) => console.log(job.args)); */
export interface HookJob extends JobContext { args: unknown }

/** One state change of one job. @example app.hooks.onTransition((t: Transition) => console.log(t.jobId, t.from, "->", t.to)); */
export interface Transition {
  jobId: number;
  task: string;
  queue: string;
  from: JobState;
  to: JobState;
  attempt: number;
  /** The error recorded with this change, if any. */
  error?: { kind: string; message: string };
}

/** Called before a body runs. @example app.hooks.beforeRun((job) => log.info("start", job.id)); */
export type BeforeRunHook = (job: HookJob) => unknown;
/** Called after a body returned. @example app.hooks.afterRun((job, result) => metrics.done(job.task)); */
export type AfterRunHook = (job: HookJob, result: unknown) => unknown;
/**
 * Sees every state change; `tx` is the transaction the change is made in (on neon-http, right after it commits).
 * @example app.hooks.onTransition(async (t, tx) => { if (t.to === "failed") await tx.insert(alerts).values({ job: t.jobId }); });
 */
export type TransitionHook = (transition: Transition, tx: Db) => unknown;

/**
 * Hook registration.
 * @example app.hooks.onTransition((t) => { if (t.to === "failed") alert(t); });
 */
export class Hooks {
  readonly before: BeforeRunHook[] = [];
  readonly after: AfterRunHook[] = [];
  readonly transition: TransitionHook[] = [];

  /** Runs before each body, inside its timeout; a throw counts as the body throwing. */
  beforeRun(hook: BeforeRunHook): void { this.before.push(hook); }
  /** Runs only when the body returned, inside its timeout; a throw spends an attempt and a retry reruns the body. */
  afterRun(hook: AfterRunHook): void { this.after.push(hook); }
  /** Runs for every state change, in the transaction that makes it. */
  onTransition(hook: TransitionHook): void { this.transition.push(hook); }
}

/** Calls the transition hooks in order for each change. */
export async function emitTransitions(hooks: Hooks, transitions: Transition[], tx: Db): Promise<void> {
  for (const transition of transitions) for (const hook of hooks.transition) await hook(transition, tx);
}

/**
 * Runs one statement so the transition hooks see its changes in its transaction: inside `db.transaction`
 * (a savepoint when `db` already is one), or on neon-http (no interactive transactions) right after it
 * commits. A throwing hook rolls the change back, except on neon-http where it has committed; either way
 * the caller gets the error. With no hooks it is just the statement.
 * @example await runWithTransitions(db, app.hooks, (d) => queryJson(d, statement), (job) => job ? [transitionOf(job)] : []);
 */
export async function runWithTransitions<T>(db: Db, hooks: Hooks | undefined, run: (db: Db) => Promise<T>, transitions: (result: T) => Transition[]): Promise<T> {
  if (!hooks || hooks.transition.length === 0) return run(db);
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
