import * as v from "valibot";
import { DurationSchema, parseDuration, type Duration } from "../core/duration.js";
import { DEFAULT_RETENTION, PRUNED_BY_DEFAULT, RETENTION_BATCH } from "../core/retention.js";
import { FINISHED_STATES, type FinishedState } from "../core/states.js";
import { MAX_SPAN_MS, parseOrThrow } from "../core/validate.js";
import { queryJson, type Db } from "../db/query.js";
import { pruneJobsStatement } from "../sql/history/prune-jobs.js";
import { msBefore } from "../sql/time.js";

/** Which finished jobs `pruneJobs` deletes. */
export interface PruneOptions {
  /** Finished longer ago than this. Default `DEFAULT_RETENTION`. */
  olderThan?: Duration;
  /** Job states to delete. Default succeeded, cancelled and rate_limited; add "failed" to drop failed jobs too. */
  states?: FinishedState[];
  now?: Date;
}

const PruneSchema = v.strictObject({
  olderThan: v.optional(v.pipe(DurationSchema, v.maxValue(MAX_SPAN_MS, `olderThan must be at most ${MAX_SPAN_MS} ms (100 years)`))),
  states: v.optional(v.pipe(v.array(v.picklist(FINISHED_STATES, "states are succeeded, cancelled, rate_limited or failed")),
    v.minLength(1, "give at least one state"))),
  now: v.optional(v.date("now must be a valid Date")),
});

/**
 * Deletes finished jobs older than an age now, batch after batch, and returns how many; invocations do the
 * same a batch at a time, so this is for failed jobs or a one-off cleanup.
 * @example await pruneJobs(db, { olderThan: "30d", states: ["failed"] });
 */
export async function pruneJobs(db: Db, options: PruneOptions = {}): Promise<{ deleted: number }> {
  const o = parseOrThrow(PruneSchema, options, "prune options");
  const cutoff = msBefore(o.now, o.olderThan ?? parseDuration(DEFAULT_RETENTION));
  let deleted = 0;
  for (;;) {
    const n = Number(await queryJson<number>(db, pruneJobsStatement(o.states ?? PRUNED_BY_DEFAULT, cutoff, RETENTION_BATCH)));
    deleted += n;
    if (n < RETENTION_BATCH) return { deleted };
  }
}
