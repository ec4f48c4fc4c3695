import { Fail, JobTimeout, Snooze } from "../core/errors.js";

/**
 * A workflow step spent its attempts (or its `retryOn` refused the error): the workflow's job fails.
 * @example if (job.errors.at(-1)?.kind === "StepFailed") console.log("a step gave up");
 */
export class StepFailed extends Fail {
  constructor(readonly step: string, readonly attempts: number, cause: unknown) {
    super(`step ${JSON.stringify(step)} failed after ${attempts} attempt${attempts === 1 ? "" : "s"}: ${messageOf(cause)}`, { cause });
  }
}

/**
 * The handler reached its steps in another order than when its steps were stored (the code changed, or it
 * branches on something other than step results), or used one step name twice: the job fails at once.
 * @example step.run(`mail-${i}`, send) // a name per iteration, not one name in a loop
 */
export class WorkflowNondeterminism extends Fail {}

/**
 * A run started on a version of its workflow that the deployed code no longer declares (neither `version` nor
 * a key of `previous`): the job fails at once, naming the run's version and the versions the code has. Deploy
 * code that has that version again (under `previous`), then `requeue` the job.
 * @example if (job.errors.at(-1)?.kind === "WorkflowVersionMissing") await requeue(db, job.id); // after the redeploy
 */
export class WorkflowVersionMissing extends WorkflowNondeterminism {
  constructor(readonly workflow: string, readonly version: number, readonly versions: number[]) {
    super(`workflow ${JSON.stringify(workflow)}: this run started on version ${version}, which this code no longer has ` +
      `(it has version${versions.length === 1 ? "" : "s"} ${versions.join(", ")}): deploy code that keeps version ${version}'s handler ` +
      `under \`previous\`, then requeue the job`);
  }
}

/**
 * A step ran past its own `timeout`: that step's attempt failed (its signal aborted, a late result is not
 * stored, a `step.transaction` rolls back) and it is retried by the step's policy, whatever `retryOn` says,
 * as a job's timeout is.
 * @example await step.run("quote", ({ signal }) => fetch(url, { signal }), { timeout: "5s", maxAttempts: 3 });
 */
export class StepTimeout extends JobTimeout {
  constructor(readonly step: string, readonly timeoutMs: number) {
    super(`step ${JSON.stringify(step)} ran past its timeout of ${timeoutMs} ms`);
  }
}

/** A workflow step was used wrongly (a result JSON cannot hold, `transaction` on neon-http): the job fails at once. */
export class StepMisuse extends Fail {}

/**
 * A step returned more JSON than a result may hold (`MAX_RESULT_BYTES`, as for a task's result): nothing of
 * the step is stored and the job fails at once, its errors entry of the same kind as a task's oversized result.
 * @example await step.run("export", async () => { await saveRows(rows); return { count: rows.length }; }) // not the rows
 */
export class OutcomeNotStorable extends Fail {}

/**
 * Thrown out of a step call to park the run (a sleep, a wait, a retry's backoff, a short budget); the
 * workflow runtime turns it into a snooze. Catching it does not keep the run going: every later step throws it again.
 */
export class StepParked extends Snooze {}

function messageOf(error: unknown): string {
  try { return error instanceof Error ? error.message : JSON.stringify(error) ?? String(error); } catch { return "an error that cannot be turned into text"; }
}
