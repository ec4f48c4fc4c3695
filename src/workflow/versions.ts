// A workflow's versions: the handler new runs start on (`version`) and the handlers that runs started on
// earlier versions keep running (`previous`), so a deploy that rewrites a workflow fails none of its parked runs.
import { InvalidInput } from "../core/errors.js";
import type { ArgsSchema } from "../app/task.js";
import { WorkflowVersionMissing } from "./errors.js";
import type { WorkflowHandler } from "./define.js";

/** A workflow's handlers by version, checked when the workflow is declared. */
export class WorkflowVersions<S extends ArgsSchema, R> {
  /** The version new runs start on. */
  readonly current: number;
  private readonly handlers = new Map<number, WorkflowHandler<S, R>>();

  constructor(private readonly workflow: string, version: number | undefined, previous: Record<number, WorkflowHandler<S, R>> | undefined,
    handler: WorkflowHandler<S, R>) {
    const what = `workflow ${workflow}`;
    this.current = version ?? 1;
    if (!Number.isSafeInteger(this.current) || this.current < 1) throw new InvalidInput(`${what}: version must be a whole number from 1, got ${JSON.stringify(version)}`);
    this.handlers.set(this.current, handler);
    if (previous === undefined) return;
    if (typeof previous !== "object" || previous === null || Array.isArray(previous)) {
      throw new InvalidInput(`${what}: previous must be an object of handlers by version, e.g. { 1: oldHandler }`);
    }
    for (const [key, old] of Object.entries(previous)) {
      const v = Number(key);
      if (!/^[1-9][0-9]*$/.test(key) || !Number.isSafeInteger(v)) throw new InvalidInput(`${what}: previous has a key ${JSON.stringify(key)}; its keys are versions (whole numbers from 1)`);
      if (v === this.current) throw new InvalidInput(`${what}: previous has version ${v}, which is the current version: the handler argument is that version's`);
      if (typeof old !== "function") throw new InvalidInput(`${what}: previous[${v}] must be a handler function`);
      this.handlers.set(v, old);
    }
  }

  /** Whether runs record the version they start on: only once a version beyond 1 is declared (until then a workflow stores no version). */
  get recorded(): boolean {
    return this.current !== 1;
  }

  /** The handler of the version a run started on, or WorkflowVersionMissing naming it and the versions this code has. */
  handlerOf(version: number): WorkflowHandler<S, R> {
    const handler = this.handlers.get(version);
    if (handler) return handler;
    throw new WorkflowVersionMissing(this.workflow, version, [...this.handlers.keys()].sort((a, b) => b - a));
  }
}
