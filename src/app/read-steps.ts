import { iso } from "../core/time-text.js";
import { queryJson, type Db } from "../db/query.js";
import { loadStepsStatement, type StoredStep } from "../sql/workflow/load-steps.js";

/**
 * A step as readers show it (`getJob`'s `steps`, `jobs show --json`, `Transition.steps()` in hooks): the stored
 * row plus, in words, what it waits for (see `stepWaitText`).
 * @example for (const s of (await getJob(db, id))?.steps ?? []) console.log(s.name, s.state, s.waitingFor ?? s.result);
 */
export interface WorkflowStep extends StoredStep {
  /** What the step waits for (`until <time>`, `event "<name>" ... until <time>`, `child jobs <ids> to finish`), or null. */
  waitingFor: string | null;
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

/**
 * A job's steps in order as readers show them (getJob, `jobs show`, hooks): ISO times, keys in reading order,
 * and what each waits for. One statement; `[]` for a job without steps.
 * @example const steps = await readSteps(db, 42); console.log(steps.map((s) => s.waitingFor));
 */
export async function readSteps(db: Db, jobId: number): Promise<WorkflowStep[]> {
  const rows = (await queryJson<StoredStep[] | null>(db, loadStepsStatement(jobId))) ?? [];
  return rows.map(shownStep);
}

// jsonb sorts object keys and prints timestamps its own way: rebuild in a reading order, with ISO times.
function shownStep(s: StoredStep): WorkflowStep {
  const step: StoredStep = {
    name: s.name, seq: s.seq, kind: s.kind, state: s.state, result: s.result, hasResult: s.hasResult, errors: s.errors, attempts: s.attempts,
    wakeAt: iso(s.wakeAt), event: s.event, match: s.match, createdAt: iso(s.createdAt)!, finishedAt: iso(s.finishedAt),
  };
  return { ...step, waitingFor: stepWaitText(step) };
}
