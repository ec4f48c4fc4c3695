import * as v from "valibot";
import { DurationSchema, type Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";

/** Options of one enqueue; they are stored on the job row and never mixed into its args. @example task.using(db, { delay: "30s", priority: 5, uniqueKey: "welcome-7" }) */
export interface EnqueueOptions {
  /** Run no sooner than this long from now. */
  delay?: Duration;
  /** Run no sooner than this instant. */
  runAt?: Date;
  /** Cancel instead of running if not started by then. */
  expiresAt?: Date;
  /** Higher runs first; a Postgres smallint. */
  priority?: number;
  /** While a job with this key is queued or running, enqueueing another throws `DuplicateJob`. */
  uniqueKey?: string;
  /** The key `setLimit` limits are counted under. */
  limitKey?: string;
  /** With `limitKey`: once due, the job may be held back by its limit this long; then it ends `rate_limited`. Overrides the task's. */
  limitWait?: Duration;
  /** Overrides the task's queue. */
  queue?: string;
}

const SMALLINT_MIN = -32768;
const SMALLINT_MAX = 32767;
/** A job id: a positive integer. @example parseOrThrow(JobIdSchema, 42, "job id") */
export const JobIdSchema = v.pipe(v.number("a job id must be a number"), v.integer("a job id must be an integer"), v.minValue(1, "a job id must be positive"));

const Name = v.pipe(v.string(), v.minLength(1, "must not be empty"), v.maxLength(200, "is too long"));

const EnqueueOptionsSchema = v.pipe(
  v.strictObject({
    delay: v.optional(DurationSchema),
    runAt: v.optional(v.pipe(v.date(), v.check((d) => !Number.isNaN(d.getTime()), "runAt is an invalid Date"))),
    expiresAt: v.optional(v.pipe(v.date(), v.check((d) => !Number.isNaN(d.getTime()), "expiresAt is an invalid Date"))),
    priority: v.optional(v.pipe(v.number(), v.integer("priority must be an integer"),
      v.minValue(SMALLINT_MIN, `priority must be at least ${SMALLINT_MIN}`), v.maxValue(SMALLINT_MAX, `priority must be at most ${SMALLINT_MAX}`))),
    uniqueKey: v.optional(Name),
    limitKey: v.optional(Name),
    limitWait: v.optional(DurationSchema),
    queue: v.optional(Name),
  }),
  v.check((o) => o.delay === undefined || o.runAt === undefined, "give delay or runAt, not both"),
  v.check((o) => o.limitWait === undefined || o.limitKey !== undefined, "limitWait bounds the wait for a limit: give it with a limitKey"),
);

export type ParsedEnqueueOptions = v.InferOutput<typeof EnqueueOptionsSchema>;

/** Validates enqueue options; throws InvalidInput with every problem in one sentence. */
export function parseEnqueueOptions(options: EnqueueOptions | undefined): ParsedEnqueueOptions {
  return parseOrThrow(EnqueueOptionsSchema, options ?? {}, "enqueue options");
}

/** Runs a valibot schema; on failure throws InvalidInput listing each issue with its path. */
export function parseOrThrow<S extends v.GenericSchema>(schema: S, input: unknown, what: string): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  throw new InvalidInput(`Invalid ${what}: ${describeIssues(result.issues)}`, { cause: result.issues });
}

export function describeIssues(issues: readonly v.BaseIssue<unknown>[]): string {
  return issues.map((issue) => {
    const path = v.getDotPath(issue);
    return path ? `${path}: ${issue.message}` : issue.message;
  }).join("; ");
}
