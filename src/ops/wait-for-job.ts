import * as v from "valibot";
import type { ArgsSchema, Task } from "../app/task.js";
import { parseDuration, type Duration } from "../core/duration.js";
import { AkadzeError, InvalidInput } from "../core/errors.js";
import { FINISHED_STATES, type JobState } from "../core/states.js";
import { DurationRangeSchema, JobIdSchema, MAX_TIMER_MS, parseOrThrow } from "../core/validate.js";
import { queryJson, type Db } from "../db/query.js";
import { jobStateStatement } from "../sql/reads/job-state.js";
import { getJob, type JobDetail } from "./jobs.js";

/** How often `waitForJob` looks at the job unless told otherwise. */
export const DEFAULT_WAIT_POLL = "1s";
/** The shortest `pollEvery`: each look is one statement (one HTTP request over neon-http). */
export const MIN_WAIT_POLL_MS = 50;

/** Options of `waitForJob`. @example await waitForJob(db, id, { timeout: "30s", pollEvery: "500ms", task: buildReport }); */
export interface WaitForJobOptions<R = unknown> {
  /** How long to wait for the job to finish; past it the wait rejects with WaitTimeout. */
  timeout: Duration;
  /** How often to look (one small statement each time). Default 1 s, at least 50 ms. */
  pollEvery?: Duration;
  /** Aborts the wait: it rejects with the signal's reason. */
  signal?: AbortSignal;
  /** The job's task: the result is typed as its handler returns it (InvalidInput if the job is another task's). */
  task?: Task<ArgsSchema, R>;
}

/** `waitForJob` gave up: the job had not finished within the timeout. `state` is what it was at the last look. */
export class WaitTimeout extends AkadzeError {
  constructor(readonly jobId: number, readonly state: JobState, timeoutMs: number) {
    super(`job ${jobId} is still ${state} after waiting ${timeoutMs} ms for it to finish`);
  }
}

const OptionsSchema = v.strictObject({
  timeout: DurationRangeSchema("timeout", 1, MAX_TIMER_MS),
  pollEvery: v.optional(DurationRangeSchema("pollEvery", MIN_WAIT_POLL_MS, MAX_TIMER_MS)),
  signal: v.optional(v.custom<AbortSignal>((s) => typeof (s as AbortSignal | null)?.aborted === "boolean", "signal must be an AbortSignal")),
  task: v.optional(v.custom<Task>((t) => typeof (t as Task | null)?.definition?.name === "string", "task must be a task handle (what app.task returns)")),
});

/**
 * Resolves with the job once it has finished (succeeded, failed, cancelled or rate_limited), looking every
 * `pollEvery` with one small statement: no LISTEN, so it suits neon-http, a route or a script. Rejects with
 * WaitTimeout past `timeout`, InvalidInput for an unknown id (or one pruned while waiting), and the signal's
 * reason when it aborts. For code outside jobs: a task or workflow waits with `step.invoke` instead.
 * @example
 * const id = await buildReport.using(db).enqueue({ month: "2026-11" });
 * const done = await waitForJob(db, id, { timeout: "30s", task: buildReport });
 * if (done.state === "succeeded") console.log(done.result?.url); // typed from buildReport's handler
 */
export async function waitForJob(db: Db, jobId: number, options: WaitForJobOptions & { task?: undefined }): Promise<JobDetail>;
export async function waitForJob<R>(db: Db, jobId: number, options: WaitForJobOptions<R> & { task: Task<ArgsSchema, R> }): Promise<JobDetail<R>>;
export async function waitForJob(db: Db, jobId: number, options: WaitForJobOptions): Promise<JobDetail> {
  const id = parseOrThrow(JobIdSchema, jobId, "job id");
  if ((options as Partial<WaitForJobOptions> | undefined)?.timeout === undefined) {
    throw new InvalidInput('Invalid waitForJob options: give a timeout, such as { timeout: "30s" }: a wait without one could last forever');
  }
  const o = parseOrThrow(OptionsSchema, options, "waitForJob options");
  const pollMs = o.pollEvery ?? parseDuration(DEFAULT_WAIT_POLL);
  const deadline = performance.now() + o.timeout;
  for (;;) {
    o.signal?.throwIfAborted();
    const seen = await queryJson<{ state: JobState; task: string } | null>(db, jobStateStatement(id));
    if (!seen) throw new InvalidInput(`no job ${id}: it was never enqueued, or it finished and was pruned`);
    if (o.task && seen.task !== o.task.name) {
      throw new InvalidInput(`job ${id} is a ${JSON.stringify(seen.task)} job, not ${JSON.stringify(o.task.name)}: wait for it with its own task, or without one`);
    }
    if ((FINISHED_STATES as readonly string[]).includes(seen.state)) {
      const job = o.task ? await getJob(db, id, o.task) : await getJob(db, id);
      if (!job) throw new InvalidInput(`no job ${id}: it finished and was pruned before it could be read`);
      return job;
    }
    const left = deadline - performance.now();
    if (left <= 0) throw new WaitTimeout(id, seen.state, o.timeout);
    await pause(Math.min(pollMs, left), o.signal);
  }
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => { clearTimeout(timer); reject(signal!.reason); };
    const timer = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
