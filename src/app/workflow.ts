// A workflow as the app declares it: its options, its handler and the handlers of its earlier versions, checked
// when declared. The runtime runs it through src/workflow (as it joins a batch task's jobs through its batches).
import type * as v from "valibot";
import { parseDuration, type Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import type { Step } from "./step.js";
import type { ArgsSchema, JobContext, TaskOptions } from "./task.js";

/** The deadline is this close or closer: the run yields before a new step instead of starting it. */
export const DEFAULT_MIN_STEP_TIME = "5s";

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

/** A declared workflow, checked: what the runtime needs beyond its task to run it. */
export interface WorkflowDefinition<R = unknown> {
  name: string;
  /** The version new runs start on. */
  version: number;
  /** Whether runs record the version they start on: only once a version beyond 1 is declared (until then a workflow stores no version). */
  recorded: boolean;
  /** The handlers by version: `version`'s and those of `previous`. */
  handlers: ReadonlyMap<number, WorkflowHandler<any, R>>;
  minStepTimeMs: number;
}

/** Checks a workflow's handler and options (throws InvalidInput) and splits off the options of its task. */
export function defineWorkflow<S extends ArgsSchema, R>(name: string, options: WorkflowOptions<S>, handler: WorkflowHandler<S, R>):
  { taskOptions: TaskOptions<S>; workflow: WorkflowDefinition<R> } {
  if (typeof handler !== "function") throw new InvalidInput(`workflow ${name}: the handler must be a function`);
  const { minStepTime, version, previous, ...taskOptions } = options;
  let minStepTimeMs: number;
  try { minStepTimeMs = parseDuration(minStepTime ?? DEFAULT_MIN_STEP_TIME, `workflow ${name}: minStepTime`); } catch (error) {
    throw new InvalidInput((error as Error).message);
  }
  const current = version ?? 1;
  const handlers = versionsOf(name, current, version, previous, handler);
  return { taskOptions, workflow: { name, version: current, recorded: current !== 1, handlers, minStepTimeMs } };
}

/** The handlers by version, each key and handler checked. */
function versionsOf<R>(name: string, current: number, version: number | undefined, previous: Record<number, WorkflowHandler<any, R>> | undefined,
  handler: WorkflowHandler<any, R>): Map<number, WorkflowHandler<any, R>> {
  const what = `workflow ${name}`;
  if (!Number.isSafeInteger(current) || current < 1) throw new InvalidInput(`${what}: version must be a whole number from 1, got ${JSON.stringify(version)}`);
  const handlers = new Map([[current, handler]]);
  if (previous === undefined) return handlers;
  if (typeof previous !== "object" || previous === null || Array.isArray(previous)) {
    throw new InvalidInput(`${what}: previous must be an object of handlers by version, e.g. { 1: oldHandler }`);
  }
  for (const [key, old] of Object.entries(previous)) {
    const v = Number(key);
    if (!/^[1-9][0-9]*$/.test(key) || !Number.isSafeInteger(v)) throw new InvalidInput(`${what}: previous has a key ${JSON.stringify(key)}; its keys are versions (whole numbers from 1)`);
    if (v === current) throw new InvalidInput(`${what}: previous has version ${v}, which is the current version: the handler argument is that version's`);
    if (typeof old !== "function") throw new InvalidInput(`${what}: previous[${v}] must be a handler function`);
    handlers.set(v, old);
  }
  return handlers;
}
