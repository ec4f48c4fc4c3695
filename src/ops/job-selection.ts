import * as v from "valibot";
import { DurationSchema, type Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { jsonProblem } from "../core/json.js";
import { JOB_STATES, type JobState } from "../core/states.js";
import { CountSchema, MAX_SPAN_MS, NameSchema, parseOrThrow } from "../core/validate.js";
import type { JobSelectionSql } from "../sql/reads/job-selection.js";
import { msBefore } from "../sql/time.js";

/** The most jobs one bulk call selects (and its default): a bigger cleanup is several calls, none holding locks on the world. */
export const BULK_LIMIT = 10_000;

/**
 * Which jobs a bulk operation (`cancelJobs`, `requeueJobs`, `replayJobs`) works on: every field given must
 * match. At most `limit` jobs are taken, oldest id first.
 * @example const selection: JobSelection = { task: "mail.send", state: "queued", args: { userId: 7 }, olderThan: "1h" };
 */
export interface JobSelection {
  task?: string;
  queue?: string;
  /** One state or several; each operation accepts the states it can act on (and defaults to all of them). */
  state?: JobState | JobState[];
  /** The fairness key the jobs were enqueued with. */
  fairKey?: string;
  /** Enqueued longer ago than this. */
  olderThan?: Duration;
  /** Enqueued less long ago than this; with `olderThan`, the jobs enqueued between the two ages. */
  newerThan?: Duration;
  /** A JSON object the args contain (`args @> {...}`: these keys with these values, nested objects matched the same way). */
  args?: Record<string, unknown>;
  /** At most this many jobs (1 to BULK_LIMIT, the default). Workflow children that a cancel reaches come on top. */
  limit?: number;
}

/** Options every bulk operation takes. @example await cancelJobs(db, { task: "mail.send" }, { dryRun: true }); */
export interface BulkOptions {
  /** Count what the call would change, and change nothing. */
  dryRun?: boolean;
  /** The clock ages are measured from; default the app's clock when given one, else the database's `now()`. */
  now?: Date;
}

const Age = (what: string) => v.pipe(DurationSchema, v.maxValue(MAX_SPAN_MS, `${what} must be at most ${MAX_SPAN_MS} ms (100 years)`));
const StateSchema = v.picklist(JOB_STATES, `state must be one of ${JOB_STATES.join(", ")}`);

const SelectionSchema = v.pipe(
  v.strictObject({
    task: v.optional(NameSchema),
    queue: v.optional(NameSchema),
    state: v.optional(v.union([StateSchema, v.pipe(v.array(StateSchema), v.minLength(1, "give at least one state"))],
      `state must be one of ${JOB_STATES.join(", ")}, or a list of them`)),
    fairKey: v.optional(NameSchema),
    olderThan: v.optional(Age("olderThan")),
    newerThan: v.optional(Age("newerThan")),
    args: v.optional(v.pipe(
      v.custom<Record<string, unknown>>((a) => typeof a === "object" && a !== null && !Array.isArray(a),
        "args must be a JSON object (the jobs whose args contain it)"),
      v.check((a) => jsonProblem(a, "args") === null, (issue) => jsonProblem(issue.input, "args")!),
    )),
    limit: v.optional(CountSchema("limit", BULK_LIMIT)),
  }),
  v.check((s) => s.olderThan === undefined || s.newerThan === undefined || s.olderThan < s.newerThan,
    "olderThan must be less than newerThan: together they select the jobs enqueued between the two ages"),
  v.check((s) => Object.keys(s).some((k) => k !== "limit"),
    "give at least one of task, queue, state, fairKey, olderThan, newerThan, args: an empty selection would take every job"),
);

const OptionsSchema = v.strictObject({
  dryRun: v.optional(v.boolean("dryRun must be true or false")),
  now: v.optional(v.date("now must be a valid Date")),
});

/**
 * The selection checked (InvalidInput naming the problem, before anything is sent) and turned into what the
 * statements take; `states` must be among those the operation acts on, and defaults to all of them.
 */
export function parseSelection(selection: JobSelection, options: BulkOptions, operation: string,
  states: readonly JobState[], clock: Date | null): { selection: JobSelectionSql; dryRun: boolean; now: Date | null } {
  const s = parseOrThrow(SelectionSchema, selection, `selection for ${operation}`);
  const o = parseOrThrow(OptionsSchema, options, `options of ${operation}`);
  const asked = s.state === undefined ? states : Array.isArray(s.state) ? s.state : [s.state];
  const wrong = asked.filter((state) => !states.includes(state));
  if (wrong.length > 0) {
    throw new InvalidInput(`Invalid selection for ${operation}: it acts on ${states.join(", ")} jobs, not ${wrong.join(", ")}`);
  }
  const now = o.now ?? clock;
  return {
    selection: {
      task: s.task, queue: s.queue, fairKey: s.fairKey, args: s.args, states: [...new Set(asked)],
      createdBefore: s.olderThan === undefined ? undefined : msBefore(now, s.olderThan),
      createdAfter: s.newerThan === undefined ? undefined : msBefore(now, s.newerThan),
      limit: s.limit ?? BULK_LIMIT,
    },
    dryRun: o.dryRun ?? false,
    now,
  };
}
