// A workflow's job, run: the runtime calls this where it calls a plain task's handler, handing over the running
// job, so a workflow's steps need nothing of the runtime's own (nor `current()`).
import type { JobContext, TaskDefinition } from "../app/task.js";
import type { WorkflowDefinition, WorkflowHandler } from "../app/workflow.js";
import { StepParked, WorkflowVersionMissing } from "./errors.js";
import { StepRunner } from "./step.js";
import type { RunningJob } from "./workflow-run.js";

/**
 * Runs one job of a workflow with its steps: loads the stored steps, replays the handler of the version the run
 * started on, and turns a park into a snooze (the run holds nothing while it waits) and a step's final failure
 * into the job's. Steps retry with the task's policy unless they give their own.
 */
export async function runWorkflow<R>(workflow: WorkflowDefinition<R>, task: TaskDefinition, args: unknown, job: JobContext, running: RunningJob): Promise<R> {
  const steps = new StepRunner(running, { maxAttempts: task.maxAttempts, backoff: task.backoff, retryOn: task.retryOn }, workflow.minStepTimeMs,
    () => job.signal);
  await steps.load(workflow.recorded ? workflow.version : undefined);
  const handler = handlerOf(workflow, steps.journal.startedOn(workflow.version));
  let result: R | undefined;
  let thrown: { error: unknown } | null = null;
  try {
    result = await handler(args, steps, job);
  } catch (error) {
    thrown = { error };
  }
  const ending = await steps.outcome();
  // A step's failure or park decides, unless the handler threw an error of its own (outside any step).
  if (thrown && !(thrown.error instanceof StepParked) && thrown.error !== ending) throw thrown.error;
  if (ending) throw ending;
  if (thrown) throw thrown.error;
  return result as R;
}

/** The handler of the version a run started on, or WorkflowVersionMissing naming it and the versions this code has. */
function handlerOf<R>(workflow: WorkflowDefinition<R>, version: number): WorkflowHandler<any, R> {
  const handler = workflow.handlers.get(version);
  if (handler) return handler;
  throw new WorkflowVersionMissing(workflow.name, version, [...workflow.handlers.keys()].sort((a, b) => b - a));
}
