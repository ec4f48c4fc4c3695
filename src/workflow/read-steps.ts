import { iso } from "../core/time-text.js";
import { queryJson, type Db } from "../db/query.js";
import { loadStepsStatement } from "../sql/load-steps.js";
import { stepWaitText, type StoredStep, type WorkflowStep } from "./types.js";

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
