/**
 * The states of a job and what moves a job out of each:
 * - `queued`: waiting for `runAt`; a claim moves it to `running`, a cancel request or `expiresAt` to `cancelled`.
 * - `running`: leased by one invocation; its outcome moves it on, or a lost lease (recovery) back to `queued`/`failed`.
 * - `succeeded`: the body returned JSON (or completeTx/completeBatch committed). Terminal.
 * - `failed`: attempts spent or `Fail` thrown. Terminal until `requeue` (it waits in `akadze.failed_jobs`).
 * - `cancelled`: cancelled before or during its run, expired, or `Cancel` thrown. Terminal.
 * - `rate_limited`: opt-in (`limitWait`): due, but held back by its limit key for longer than its
 *   `limitWait`, and its key still had no room when a claim looked. It never started. Terminal.
 * Queued and running jobs live in `akadze.jobs`; succeeded, cancelled and rate_limited ones in `akadze.job_history`.
 */
/** @example if (JOB_STATES.includes(s)) ... */
export const JOB_STATES = ["queued", "running", "succeeded", "failed", "cancelled", "rate_limited"] as const;
/** One of JOB_STATES. @example const s: JobState = "queued"; */
export type JobState = (typeof JOB_STATES)[number];
/** The states a job ends in, each with its `finished_at`: what retention and `pruneJobs` delete. @example FINISHED_STATES.includes(s) */
export const FINISHED_STATES = ["succeeded", "failed", "cancelled", "rate_limited"] as const satisfies readonly JobState[];
/** One of FINISHED_STATES. */
export type FinishedState = (typeof FINISHED_STATES)[number];
