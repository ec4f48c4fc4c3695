import type * as v from "valibot";
import { buildJobBatch, type ArgsSchema, type Task } from "../app/task.js";
import { parseDuration } from "../core/duration.js";
import { Fail, InvalidInput } from "../core/errors.js";
import { queryJson } from "../db/query.js";
import { readChildJobsStatement } from "../sql/workflow/read-child-jobs.js";
import { startChildJobsStatement } from "../sql/workflow/start-child-jobs.js";
import { timestamp } from "../sql/time.js";
import type { ChildJob, ChildJobsOptions, StepName } from "../app/step.js";
import type { WorkflowRun } from "./workflow-run.js";

/** How often a workflow waiting for its child jobs looks at them, unless told otherwise. */
export const DEFAULT_CHILD_POLL = "10s";

/** `step.invoke`'s child did not succeed. Catch it to go on; uncaught, it fails the workflow like any error between steps. */
export class ChildJobFailed extends Fail {
  constructor(readonly child: ChildJob) {
    super(`child job ${child.id} ended ${child.state}${child.error ? `: ${child.error.message}` : ""}`);
  }
}

/**
 * Enqueues the children with the step that waits for them (one statement, so exactly once), then parks,
 * looking every `poll` until none is queued or running; the outcomes are stored and returned in order.
 */
export async function runChildJobs<S extends ArgsSchema, R>(r: WorkflowRun, step: StepName, task: Task<S, R>, args: v.InferInput<S>[],
  options: ChildJobsOptions = {}): Promise<ChildJob<R>[]> {
  const { seq, name } = r.enter(step, "jobs");
  const pollMs = pollOf(r, name, options);
  const stored = r.journal.steps.get(name);
  if (stored?.state === "done") return stored.result as ChildJob<R>[];
  const { owner, now } = r.job.runtime;
  if (!stored) {
    const list = checkArgs(r, name, task, args, options);
    // Traced: the step that starts the children is a span of the run, and the children's runs link to it.
    const span = r.job.trace === null ? null : r.job.trace.step(name, "jobs", 1);
    try {
      await queryJson(r.db, startChildJobsStatement(owner, r.job.id, timestamp(now()), { name, seq, wakeAt: new Date(r.now() + pollMs) },
        buildJobBatch(task.definition, list, options.enqueue, now(), [], span?.carrier() ?? null), list.map((a) => a ?? {})));
    } catch (error) {
      span?.end(error);
      throw r.leaseLostOr(error);
    }
    span?.end();
    throw r.park(pollMs);
  }
  const ids = (stored.result as (number | string)[]).map(Number);
  const rows = await queryJson<ChildJob<R>[]>(r.db, readChildJobsStatement(ids));
  const byId = new Map(rows.map((row) => [Number(row.id), row]));
  if (rows.some((row) => row.state === ("queued" as string) || row.state === ("running" as string))) throw r.park(pollMs);
  const outcomes = ids.map((id): ChildJob<R> => {
    const row = byId.get(id);
    return row ? { id, state: row.state, result: row.result ?? null, error: row.error ?? null } : { id, state: "missing", result: null, error: null };
  });
  await r.save(r.db, { name, seq, kind: "jobs", state: "done", result: outcomes, attempts: 1 });
  return outcomes;
}

function pollOf(r: WorkflowRun, name: string, options: ChildJobsOptions): number {
  try {
    const ms = parseDuration(options.poll ?? DEFAULT_CHILD_POLL, `step ${JSON.stringify(name)}: poll`);
    if (ms < 1000) throw new TypeError(`step ${JSON.stringify(name)}: poll must be at least 1 s (each look is a claim of the workflow)`);
    return ms;
  } catch (error) {
    throw r.fail(new InvalidInput((error as Error).message));
  }
}

function checkArgs(r: WorkflowRun, name: string, task: Task<any>, args: unknown[], options: ChildJobsOptions): unknown[] {
  if (!task || typeof task !== "object" || !task.definition) throw r.fail(new InvalidInput(`step ${JSON.stringify(name)}: give a task handle (what app.task returns)`));
  if (!Array.isArray(args) || args.length === 0) throw r.fail(new InvalidInput(`step ${JSON.stringify(name)}: give at least one args for the child jobs`));
  if (options.enqueue?.uniqueKey !== undefined) throw r.fail(new InvalidInput(`step ${JSON.stringify(name)}: child jobs take no uniqueKey (the step already starts them once)`));
  return args;
}
