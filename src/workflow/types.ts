import type { BackoffPolicy } from "../core/backoff.js";
import type { ErrorEntry } from "../core/errors.js";

/** A step as stored in `akadze.steps` and shown by `getJob` (timestamps are ISO strings). */
export interface StoredStep {
  name: string;
  /** Its position in the handler's order of step calls, from 0 (a `patch` marker: the position it was reached at; the `version` entry: -1). */
  seq: number;
  /** What the handler called; `patch` is a `step.patched` marker and `version` the workflow version the run started on (docs/workflows.md#changing-a-workflow-while-runs-are-parked). */
  kind: "run" | "sleep" | "event" | "jobs" | "patch" | "version";
  /** `done`; `retrying` (failed, parked for its backoff); `failed` (gave up); `waiting` (a sleep or event wait); `timed_out` (a wait that got no event). */
  state: "done" | "retrying" | "failed" | "waiting" | "timed_out";
  result: unknown;
  /** False when the step returned nothing (`undefined`). */
  hasResult: boolean;
  errors: ErrorEntry[];
  /** Runs of this step so far (since the workflow was last requeued). */
  attempts: number;
  /** When a sleep ends or a wait times out. */
  wakeAt: string | null;
  /** The event an event wait waits for, and the object its payload must contain. */
  event: string | null;
  match: unknown;
  createdAt: string;
  finishedAt: string | null;
}

/**
 * A step as readers show it (`getJob`'s `steps`, `jobs show --json`, `Transition.steps()` in hooks): the stored
 * row plus, in words, what it waits for (see `stepWaitText`).
 * @example for (const s of (await getJob(db, id))?.steps ?? []) console.log(s.name, s.state, s.waitingFor ?? s.result);
 */
export interface WorkflowStep extends StoredStep {
  /** What the step waits for (`until <time>`, `event "<name>" ... until <time>`, `child jobs <ids> to finish`), or null. */
  waitingFor: string | null;
}

/** The retry policy steps get from their workflow task. */
export interface StepPolicy {
  maxAttempts: number;
  backoff: BackoffPolicy | undefined;
  retryOn: ((error: unknown) => boolean) | undefined;
}

/**
 * What a step waits for, in words, or null when it waits for nothing: `until <time>` for a sleep or a
 * retry's backoff, `child jobs <ids> to finish`, `event "<name>" matching <json> until <time>` for an event wait.
 * @example stepWaitText(step) // 'event "order.shipped" matching {"orderId":7} until 2026-06-08T12:00:00.000Z'
 */
export function stepWaitText(step: StoredStep): string | null {
  if (step.state !== "waiting") return null;
  if (step.kind === "jobs") return `child jobs ${(step.result as unknown[] | null ?? []).join(", ")} to finish`;
  if (step.kind !== "event") return `until ${step.wakeAt}`;
  return `event ${JSON.stringify(step.event)}${step.match == null ? "" : ` matching ${JSON.stringify(step.match)}`} until ${step.wakeAt}`;
}
