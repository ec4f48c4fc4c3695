import { tryParseDuration, type Duration } from "../core/duration.js";
import { AkadzeError, InvalidInput } from "../core/errors.js";
import { MAX_SPAN_MS } from "../core/validate.js";
import type { ArgsSchema, BatchDefinition, BatchHandler, TaskOptions } from "./task-definition.js";

export type { BatchDefinition, BatchHandler, BatchJob, BatchOutcomes } from "./task-definition.js";

/** The most jobs one call of a batch handler may get. @example app.batchTask("t", { maxBatch: MAX_BATCH_JOBS }, handle); */
export const MAX_BATCH_JOBS = 1000;

/**
 * How long the first job of a batch waits for more unless its task says: a round trip or a few to start the
 * jobs its invocation holds, with room to spare, and no more than a worker's job waits for company.
 * @example app.batchTask("t", { maxBatch: 50, maxWait: DEFAULT_BATCH_WAIT }, handle);
 */
export const DEFAULT_BATCH_WAIT = "1s";

/**
 * A batch task's options: a task's (its `args` describe one job's), plus how many started jobs one handler call
 * takes and how long the first of them waits for the others.
 * @example app.batchTask("mail.digest", { args: Mail, maxBatch: 100, maxWait: "2s" }, async (jobs) => jobs.map(() => ({ sent: true })));
 */
export interface BatchTaskOptions<S extends ArgsSchema = ArgsSchema> extends TaskOptions<S> {
  /** The most jobs one handler call gets (1 to MAX_BATCH_JOBS). */
  maxBatch: number;
  /**
   * How long the first job of a batch waits for more to fill it (never more than half its timeout). Sooner
   * when the batch is full, or when its invocation holds no other job of the task and will claim no more.
   * Default `DEFAULT_BATCH_WAIT` ("1s"); 0: only the jobs that started together.
   */
  maxWait?: Duration;
}



/**
 * A batch handler's answer gave no outcome for a job (a short array, a Map without its id), or could not be
 * matched to the jobs (a longer array, neither array nor Map): that job's attempt is spent and it retries.
 * @example return jobs.map((job) => ({ id: job.id })); // one entry per job
 */
export class BatchOutcomeMissing extends AkadzeError {}

/** The batching of task `name`, checked (InvalidInput names the option). */
export function batchDefinition(name: string, options: BatchTaskOptions<any>, handler: BatchHandler<any, unknown>, timeoutMs: number | undefined): BatchDefinition {
  const what = `batch task ${name}`;
  const { maxBatch } = options;
  if (typeof maxBatch !== "number" || !Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > MAX_BATCH_JOBS) {
    throw new InvalidInput(`${what}: maxBatch must be a whole number from 1 to ${MAX_BATCH_JOBS}, got ${JSON.stringify(maxBatch)}`);
  }
  if (options.maxWait === undefined) return { maxBatch, maxWaitMs: tryParseDuration(DEFAULT_BATCH_WAIT)!, handler: checkedHandler(what, handler) };
  const maxWaitMs = tryParseDuration(options.maxWait);
  if (maxWaitMs === undefined || maxWaitMs > MAX_SPAN_MS) {
    throw new InvalidInput(`${what}: maxWait must be a duration of at least 0 such as "2s", got ${JSON.stringify(options.maxWait)}`);
  }
  if (timeoutMs !== undefined && maxWaitMs >= timeoutMs) {
    throw new InvalidInput(`${what}: maxWait (${maxWaitMs} ms) must be shorter than its timeout (${timeoutMs} ms): a job waits for its batch inside its timeout`);
  }
  return { maxBatch, maxWaitMs, handler: checkedHandler(what, handler) };
}

function checkedHandler(what: string, handler: BatchHandler<any, unknown>): BatchHandler<any, unknown> {
  if (typeof handler !== "function") throw new InvalidInput(`${what}: the handler must be a function`);
  return handler;
}

/** One job's share of a batch's answer: its result, or its error. */
export type JobOutcome = { result: unknown; error?: undefined } | { error: unknown };

/**
 * Each job's outcome from what the handler returned: matched by position (an array) or by id (a Map). One job's
 * missing entry is that job's error only; an answer that cannot be matched at all is every job's.
 */
export function outcomesOf(task: string, jobs: readonly { id: number }[], returned: unknown): JobOutcome[] {
  const all = (message: string) => jobs.map(() => ({ error: new BatchOutcomeMissing(`the batch handler of task ${task} ${message}`) }));
  const entry = (value: unknown): JobOutcome => value instanceof Error ? { error: value } : { result: value };
  const missing = (id: number): JobOutcome => ({ error: new BatchOutcomeMissing(`the batch handler of task ${task} returned no outcome for job ${id}`) });
  if (returned === undefined) return jobs.map(() => ({ result: undefined }));
  if (Array.isArray(returned)) {
    if (returned.length > jobs.length) {
      return all(`returned ${returned.length} outcomes for ${jobs.length} jobs: give one per job, in the order of the jobs (or a Map by job id)`);
    }
    return jobs.map((job, i) => i in returned ? entry(returned[i]) : missing(job.id));
  }
  if (returned instanceof Map) return jobs.map((job) => returned.has(job.id) ? entry(returned.get(job.id)) : missing(job.id));
  return all(`returned ${describe(returned)}, not an array of outcomes (one per job, in order) or a Map by job id`);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "object") return `an object (${value.constructor?.name ?? "no prototype"})`;
  return `a ${typeof value}`;
}
