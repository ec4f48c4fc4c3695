import type * as v from "valibot";
import { parseDuration, type Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import type { ArgsSchema, Handler, JobContext, TaskDefinition, TaskOptions } from "../app/task.js";
import { current } from "../runtime/context.js";
import { StepParked } from "./errors.js";
import { DEFAULT_MIN_STEP_TIME, StepRunner, type Step } from "./step.js";
import { WorkflowVersions } from "./versions.js";

/** A workflow's options: a task's, plus when to yield. @example app.workflow("order.fulfil", { args: Order, minStepTime: "10s" }, handler); */
export interface WorkflowOptions<S extends ArgsSchema = ArgsSchema> extends TaskOptions<S> {
  /**
   * A new step starts only while at least this much of the run's time (its timeout, or what is left of
   * the invocation's budget) remains; otherwise the run yields and a later invocation goes on from there.
   * At least one new step runs per run. Default 5 s.
   */
  minStepTime?: Duration;
  /**
   * The version of the handler (a whole number, default 1). Runs record the version they start on, and keep
   * running that version's handler after a deploy: give the handlers of versions that parked runs started on
   * in `previous`. A run whose version the code no longer has fails with `WorkflowVersionMissing`.
   */
  version?: number;
  /**
   * Earlier versions' handlers, by version, for the runs that started on them. Drop one once none of its runs
   * is left unfinished.
   * @example app.workflow("order.fulfil", { version: 2, previous: { 1: fulfilV1 } }, fulfilV2);
   */
  previous?: Record<number, WorkflowHandler<S, any>>;
}

/** A workflow body: validated args, its steps, and the job context. @example const body: WorkflowHandler<typeof Args> = async (args, step) => step.run("a", () => 1); */
export type WorkflowHandler<S extends ArgsSchema, R = unknown> = (args: v.InferOutput<S>, step: Step, job: JobContext) => Promise<R> | R;

/**
 * The task body that runs a workflow handler with its steps: it loads the stored steps, replays the
 * handler, and turns a park into a snooze (the run holds nothing while it waits) and a step's final
 * failure into the job's. `definition` is read at run time (the task is registered with this body).
 */
export function workflowBody<S extends ArgsSchema, R>(name: string, options: WorkflowOptions<S>, handler: WorkflowHandler<S, R>,
  definition: () => TaskDefinition<R>): { taskOptions: TaskOptions<S>; body: Handler<S, R> } {
  if (typeof handler !== "function") throw new InvalidInput(`workflow ${name}: the handler must be a function`);
  const { minStepTime, version, previous, ...taskOptions } = options;
  const versions = new WorkflowVersions<S, R>(name, version, previous, handler);
  let minStepTimeMs: number;
  try { minStepTimeMs = parseDuration(minStepTime ?? DEFAULT_MIN_STEP_TIME, `workflow ${name}: minStepTime`); } catch (error) {
    throw new InvalidInput((error as Error).message);
  }
  const body: Handler<S, R> = async (args, job) => {
    const d = definition();
    const steps = new StepRunner(current(), { maxAttempts: d.maxAttempts, backoff: d.backoff, retryOn: d.retryOn }, minStepTimeMs,
      () => job.signal);
    await steps.load(versions.recorded ? versions.current : undefined);
    const run = versions.handlerOf(steps.journal.startedOn(versions.current));
    let result: R | undefined;
    let thrown: { error: unknown } | null = null;
    try {
      result = await run(args, steps, job);
    } catch (error) {
      thrown = { error };
    }
    const ending = await steps.outcome();
    // A step's failure or park decides, unless the handler threw an error of its own (outside any step).
    if (thrown && !(thrown.error instanceof StepParked) && thrown.error !== ending) throw thrown.error;
    if (ending) throw ending;
    if (thrown) throw thrown.error;
    return result as R;
  };
  return { taskOptions, body };
}
