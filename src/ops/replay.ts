import * as v from "valibot";
import type { App } from "../app/app.js";
import { DuplicateJob } from "../core/errors.js";
import { FINISHED_STATES } from "../core/states.js";
import { assertStorableJson, JobIdSchema, parseOrThrow } from "../core/validate.js";
import { queryJson, type Db } from "../db/query.js";
import { jobStateStatement } from "../sql/reads/job-state.js";
import { replayJobsStatement, type ReplaySource } from "../sql/control/replay-jobs.js";
import { timestamp } from "../sql/time.js";
import { withDuplicateJob } from "./bulk.js";
import { parseSelection, type BulkOptions, type JobSelection } from "./job-selection.js";

/** Options of `replayJob`. @example await replayJob(db, id, { args: { userId: 8 }, app }); */
export interface ReplayOptions {
  /** The new job's args instead of the old job's; checked against the task's schema when `app` is given. */
  args?: unknown;
  /** The app: new args are validated by its task's schema, and its clock says when the new job is due. */
  app?: App;
  /** When the new job is due (at once, by default the app's clock or the database's). */
  now?: Date;
}

/** Options of `replayJobs`. @example await replayJobs(db, { state: "failed", task: "mail.send" }, { dryRun: true }); */
export interface ReplayJobsOptions extends BulkOptions {
  /** The app whose clock measures ages and says when the new jobs are due. */
  app?: App;
}

const ReplayOptionsSchema = v.strictObject({
  args: v.optional(v.unknown()),
  app: v.optional(v.custom<App>((a) => (a as App | null)?.tasks instanceof Map, "app must be what createApp returns")),
  now: v.optional(v.date("now must be a valid Date")),
});

interface Replayed { count: number | string; ids: (number | string)[]; clash: string | null }

/**
 * Runs a finished job (succeeded, failed, cancelled or rate_limited; from the history or the dead letters)
 * again as a NEW job, optionally with new args: same task, queue, priority, attempts and keys, due now, and
 * `getJob(db, newId).replayOf` is the old job's id. The old job stays as it was. Resolves to the new job's id,
 * or null when no finished job has this id (it is active, pruned, or never was). DuplicateJob if an active
 * job holds its unique key.
 * @example
 * const again = await replayJob(db, failedId, { args: { userId: 8 }, app });
 * (await getJob(db, again!))?.replayOf; // failedId
 */
export async function replayJob(db: Db, jobId: number, options: ReplayOptions = {}): Promise<number | null> {
  const id = parseOrThrow(JobIdSchema, jobId, "job id");
  const { args, app, now } = parseOrThrow(ReplayOptionsSchema, options, "replay options");
  if (args !== undefined) {
    assertStorableJson(args, "args", `args for the replay of job ${id}`);
    const job = app ? await queryJson<{ task: string } | null>(db, jobStateStatement(id)) : null;
    const task = job ? app!.tasks.get(job.task) : undefined;
    if (task) parseOrThrow(task.schema, args, `args for task ${task.name}`);
  }
  const source: ReplaySource = args === undefined ? { id } : { id, args };
  const at = timestamp(now ?? app?.sqlClock?.() ?? null);
  const replayed = await withDuplicateJob(() => queryJson<Replayed>(db, replayJobsStatement(source, at, false)));
  if (replayed.clash !== null) throw new DuplicateJob(replayed.clash);
  return replayed.ids.length === 0 ? null : Number(replayed.ids[0]);
}

/**
 * Replays every finished job the selection takes (at most `limit`, oldest first; any finished state unless
 * `state` says which) as new jobs, each recording the job it replays (see `replayJob`). A job whose unique key
 * an active job holds is left out, as are all but the newest of several sharing a key. Returns how many new
 * jobs it enqueued; `dryRun` says how many it would, changing nothing.
 * @example await replayJobs(db, { task: "mail.send", state: "failed", newerThan: "1d" });
 */
export async function replayJobs(db: Db, selection: JobSelection, options: ReplayJobsOptions = {}): Promise<number> {
  const { app, ...rest } = options;
  const p = parseSelection(selection, rest, "replayJobs", FINISHED_STATES, app?.sqlClock?.() ?? null);
  const replayed = await withDuplicateJob(() => queryJson<Replayed>(db, replayJobsStatement({ selection: p.selection }, timestamp(p.now), p.dryRun)));
  return Number(replayed.count);
}
