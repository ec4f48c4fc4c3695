import { AkadzeError, TRANSITION_HOOK_FAILED, type ErrorEntry } from "../core/errors.js";
import { boundedEntry, errorEntryOf } from "../core/error-entry.js";
import type { JobState } from "../core/states.js";
import type { Db } from "../db/query.js";
import { traitsOf } from "../db/traits.js";
import { recordHookFailuresStatement } from "../sql/settle/record-hook-failures.js";
import { readSteps, type WorkflowStep } from "./read-steps.js";
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
  /**
   * Present when the job is one of the app's workflows: its steps (results, errors, what each waits for) as
   * they stand in this change's transaction. Read on the first call (one statement, through the hook's `tx`),
   * so a hook that never calls it, and every job that is not a workflow, costs nothing more.
   * @example app.hooks.onTransition(async (t) => { const steps = await t.steps?.(); if (steps) log(t.jobId, steps.map((s) => s.waitingFor ?? s.state)); });
   */
  steps?: () => Promise<WorkflowStep[]>;
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

/** How long the transition hooks of one statement may take together, unless the app says otherwise. @example createApp({ transitionHookTimeout: DEFAULT_TRANSITION_HOOK_TIMEOUT }) */
export const DEFAULT_TRANSITION_HOOK_TIMEOUT = "5s";

/**
 * Hook registration.
 * @example app.hooks.onTransition((t) => { if (t.to === "failed") alert(t); });
 */
export class Hooks {
  readonly before: BeforeRunHook[] = [];
  readonly after: AfterRunHook[] = [];
  readonly transition: TransitionHook[] = [];

  /**
   * @param timeoutMs how long the transition hooks of one statement may take together: past it the statement
   *   goes on without them (its transaction, and the row locks it holds, are not kept waiting for a hook).
   * @param isWorkflow whether a task is a workflow, whose transitions carry `steps()` (the app tells).
   */
  constructor(readonly timeoutMs = 5_000, private readonly isWorkflow: (task: string) => boolean = () => false,
    /** The app's clock: a failed hook's errors entry is stamped by it. */
    readonly now: () => Date = () => new Date()) {}

  /** The transition as a hook called with `db` sees it: a workflow's gets `steps()`, reading through `db`. @internal */
  seenBy(t: Transition, db: Db): Transition {
    if (!this.isWorkflow(t.task)) return t;
    let read: Promise<WorkflowStep[]> | undefined;
    return { ...t, steps: () => (read ??= readSteps(db, t.jobId)) };
  }

  /** Runs before each body, inside its timeout; a throw counts as the body throwing. */
  beforeRun(hook: BeforeRunHook): void { this.before.push(hook); }
  /** Runs only when the body returned, inside its timeout; a throw spends an attempt and a retry reruns the body. */
  afterRun(hook: AfterRunHook): void { this.after.push(hook); }
  /** Runs for every state change, in the transaction that makes it. */
  onTransition(hook: TransitionHook): void { this.transition.push(hook); }
}

/** A hook call that did not settle before its statement's hook deadline, or was not made because the deadline had passed. */
export class HookTimeout extends AkadzeError {}

/**
 * The hooks of a statement an invocation sends near its budget's end still get this long (as its last
 * statement gets its round trip), however little of the budget is left.
 */
export const MIN_HOOK_TIME_MS = 500;

/** When (monotonic ms) one statement's transition hooks must be done, and how long that gives them, with why. */
interface HookDeadline { at: number; ms: number; why: string }

/**
 * The hooks' timeout, or what is left of the invocation's budget (`remainingMs`) if that is shorter (at least
 * MIN_HOOK_TIME_MS): a hook that never settles does not keep an invocation past its budget.
 */
function hookDeadline(hooks: Hooks, remainingMs?: () => number): HookDeadline {
  const left = remainingMs ? Math.max(MIN_HOOK_TIME_MS, remainingMs()) : Infinity;
  const ms = Math.min(hooks.timeoutMs, left);
  return { at: performance.now() + ms, ms, why: ms < hooks.timeoutMs ? "what was left of the invocation's budget" : "the statement's hooks may take" };
}

/** The hook's promise, or a HookTimeout once the deadline passes (the hook itself is not stopped: it is no longer waited for). */
async function withinDeadline(call: () => unknown, deadline: HookDeadline, t: Transition): Promise<void> {
  const what = `an onTransition hook on ${t.from} -> ${t.to} of job ${t.jobId}`;
  const left = deadline.at - performance.now();
  if (left <= 0) throw new HookTimeout(`${what} was not called: the statement's hooks had used their ${Math.round(deadline.ms)} ms (${deadline.why})`);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new HookTimeout(`${what} did not settle within the ${Math.round(deadline.ms)} ms ${deadline.why}`)), left);
  });
  try {
    await Promise.race([Promise.resolve().then(call), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Calls the transition hooks in order for each change, all within the hooks' deadline (a HookTimeout past it). */
export async function emitTransitions(hooks: Hooks, transitions: Transition[], tx: Db): Promise<void> {
  const deadline = hookDeadline(hooks);
  for (const transition of transitions) {
    for (const hook of hooks.transition) await withinDeadline(() => hook(hooks.seenBy(transition, tx), tx), deadline, transition);
  }
}

/**
 * Runs one statement so the transition hooks see its changes in its transaction: inside `db.transaction`
 * (a savepoint when `db` already is one), or on neon-http (no interactive transactions) right after it
 * commits. With no hooks it is just the statement. What a throwing hook does depends on `onHookError`:
 * - "throw" (control operations such as `requeue`): the change rolls back, except on neon-http where it has
 *   committed; either way the caller gets the error.
 * - "record" (the engine's claims and settles, which move many jobs at once): the hook affects only its own
 *   job's change. Each call runs in a savepoint, so its writes are undone, the change stands, and
 *   `TransitionHookFailed` is appended to that job's errors; other jobs, claims and recovery go on.
 *   `remainingMs` (an invocation's budget left) shortens the hooks' deadline to it (MIN_HOOK_TIME_MS at least).
 * @example await runWithTransitions(db, app.hooks, (d) => queryJson(d, statement), (job) => job ? [transitionOf(job)] : []);
 */
export async function runWithTransitions<T>(db: Db, hooks: Hooks | undefined, run: (db: Db) => Promise<T>,
  transitions: (result: T) => Transition[], onHookError: "throw" | "record" = "throw", remainingMs?: () => number): Promise<T> {
  if (!hooks || hooks.transition.length === 0) return run(db);
  const record = onHookError === "record";
  if (traitsOf(db).http) {
    const result = await run(db);
    if (!record) await emitTransitions(hooks, transitions(result), db);
    // The change is committed; a lost note must not undo the caller's count of it.
    else await recordHookFailures(db, hooks, await callHooksIsolated(hooks, transitions(result), db, false, remainingMs)).catch(() => {});
    return result;
  }
  return db.transaction(async (tx) => {
    const result = await run(tx as unknown as Db);
    if (!record) await emitTransitions(hooks, transitions(result), tx as unknown as Db);
    else await recordHookFailures(tx as unknown as Db, hooks, await callHooksIsolated(hooks, transitions(result), tx as unknown as Db, true, remainingMs));
    return result;
  });
}

interface HookFailure { transition: Transition; error: unknown }

async function callHooksIsolated(hooks: Hooks, transitions: Transition[], tx: Db, savepoints: boolean, remainingMs?: () => number): Promise<HookFailure[]> {
  const failures: HookFailure[] = [];
  // One deadline for the statement's every call: a hook that never settles costs the statement (and the row
  // locks its transaction holds) at most the hooks' timeout, and the calls after it are recorded as not made.
  const deadline = hookDeadline(hooks, remainingMs);
  for (const transition of transitions) {
    for (const hook of hooks.transition) {
      const call = (db: Db) => withinDeadline(() => hook(hooks.seenBy(transition, db), db), deadline, transition);
      try {
        if (performance.now() >= deadline.at) await call(tx);
        else if (savepoints) await tx.transaction(async (sp) => { await call(sp as unknown as Db); });
        else await call(tx);
      } catch (error) {
        failures.push({ transition, error });
      }
    }
  }
  return failures;
}

/** Appends each failed hook call to its job's errors, in one statement. */
async function recordHookFailures(db: Db, hooks: Hooks, failures: HookFailure[]): Promise<void> {
  if (failures.length === 0) return;
  const entries = failures.map(({ transition: t, error }) => ({ id: t.jobId, entry: hookErrorEntry(t, error, hooks.now()) }));
  await db.execute(recordHookFailuresStatement(entries));
}

function hookErrorEntry(t: Transition, error: unknown, at: Date): ErrorEntry {
  return boundedEntry(errorEntryOf(error, t.attempt, at, { kind: TRANSITION_HOOK_FAILED, message: (m) => `an onTransition hook threw on ${t.from} -> ${t.to}: ${m}` }));
}

/** A state change the database reported as `{ id, task, queue, attempt, from, to }`, with the error it recorded (given, or the report's own `error`). */
export function transitionOf(t: { id: number | string; task: string; queue: string; attempt: number; from: string; to: string; error?: Transition["error"] | null },
  error: Transition["error"] = t.error ?? undefined): Transition {
  return { jobId: Number(t.id), task: t.task, queue: t.queue, from: t.from as Transition["from"], to: t.to as Transition["to"], attempt: t.attempt, ...(error ? { error } : {}) };
}
