// `step.patched(id)`: the branch a deploy adds to a workflow without failing the runs parked on the old code.
import { NameSchema, parseOrThrow } from "../core/validate.js";
import { StepMisuse } from "./errors.js";
import type { WorkflowRun } from "./workflow-run.js";

/** A patch's marker is stored as `patch:<id>`, so a patch and the step it guards may share a name. */
export const PATCH_PREFIX = "patch:";

/**
 * True when this run reaches `id` on the new code, false when its journal already went past this point
 * without it. A fresh `true` is stored as a marker (kind `patch`) so every replay answers the same; the
 * marker takes no position, so steps keep their positions whether the run took the patch or not, and
 * removing the call later (once no run on the old path is left) breaks no replay.
 */
export async function patchedStep(r: WorkflowRun, id: string): Promise<boolean> {
  r.assertGoing();
  const decided = r.patchAnswers.get(id);
  if (decided !== undefined) return decided;
  try { parseOrThrow(NameSchema, id, "patch id"); } catch (error) { throw r.fail(new StepMisuse((error as Error).message)); }
  const name = PATCH_PREFIX + id;
  const at = r.seq; // where the handler is now: the next step would take this position
  if (r.journal.patches.has(name)) return answer(r, id, name, true);
  if (r.journal.steps.has(name)) r.take(name); // a step stored under the marker's name: used twice
  if (r.journal.furthestSeq >= at) return answer(r, id, name, false);
  answer(r, id, name, true); // decided before the write, so a parallel call with the same id does not store twice
  await r.save(r.db, { name, seq: at, kind: "patch", state: "done", result: true, attempts: 1 });
  return true;
}

function answer(r: WorkflowRun, id: string, name: string, value: boolean): boolean {
  if (r.seen.has(name)) r.take(name); // a step of this run has the marker's name: fails the run
  r.seen.add(name);
  r.patchAnswers.set(id, value);
  return value;
}
