import { queryJson, type Db } from "../db/query.js";
import { readJobProgressStatement } from "../sql/reads/read-job-progress.js";
import type { JobState } from "../core/states.js";
import { iso } from "../core/time-text.js";

/** One look at a job for someone following it: its state, latest progress, and once it ended its result and last error. */
export interface JobProgressLook {
  state: JobState;
  attempt: number;
  /** The job's result (null until it succeeded). */
  result: unknown;
  /** The job's last error, if it has one. */
  error: { message: string } | null;
  /** The last value it reported with `job.progress`, and when (both null before any). */
  progress: unknown;
  progressAt: string | null;
}

/**
 * The job as a watcher sees it, in one statement (what the event stream of `akadze/hono` polls); null for an unknown id.
 * @example const look = await readJobProgress(db, id); if (look?.state === "succeeded") show(look.result);
 */
export async function readJobProgress(db: Db, jobId: number): Promise<JobProgressLook | null> {
  const look = await queryJson<JobProgressLook | undefined>(db, readJobProgressStatement(jobId));
  return look == null ? null : { ...look, attempt: Number(look.attempt), progressAt: iso(look.progressAt) };
}
