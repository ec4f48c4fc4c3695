import { sql, type SQL } from "drizzle-orm";
import type { ErrorEntry } from "../../core/errors.js";
import { LEASE_LOST_CODE, LEASE_LOST_PREFIX } from "../settle/complete-owned.js";

/** One step's row as a run writes it. `result: undefined` stores SQL NULL (the step returned nothing). */
export interface StepWrite {
  name: string;
  seq: number;
  kind: "run" | "sleep" | "event" | "jobs" | "patch";
  state: "done" | "retrying" | "failed" | "waiting" | "timed_out";
  result?: unknown;
  /** Appended to the step's errors. */
  error?: ErrorEntry;
  attempts: number;
  wakeAt?: Date | null;
  event?: string | null;
  match?: unknown;
}

/**
 * Inserts or updates one step of a job, only while `owner` holds the job's lease (the job's row is locked
 * for share until the statement's transaction ends, so no recovery can take it meanwhile); raises
 * LEASE_LOST_CODE otherwise, so that the app's writes in the same transaction or batch roll back with it.
 */
export function saveStepStatement(owner: string, jobId: number, at: SQL, step: StepWrite): SQL {
  const result = step.result === undefined ? null : JSON.stringify(step.result);
  const errors = JSON.stringify(step.error ? [step.error] : []);
  const finished = step.state === "done" || step.state === "failed" || step.state === "timed_out";
  return sql`
    with owned as (select id from akadze.jobs where id = ${jobId} and state = 'running' and lease_owner = ${owner} for share),
    saved as (
      insert into akadze.steps as s (job_id, name, seq, kind, state, result, errors, attempts, wake_at, event, match, created_at, finished_at)
      select id, ${step.name}, ${step.seq}, ${step.kind}, ${step.state}, ${result}::jsonb, ${errors}::jsonb, ${step.attempts},
        ${step.wakeAt ? step.wakeAt.toISOString() : null}::timestamptz, ${step.event ?? null}, ${step.match === undefined ? null : JSON.stringify(step.match)}::jsonb,
        ${at}, case when ${finished} then ${at} end
      from owned
      on conflict (job_id, name) do update set state = excluded.state, result = excluded.result, errors = s.errors || excluded.errors,
        attempts = excluded.attempts, wake_at = excluded.wake_at, finished_at = excluded.finished_at
      returning 1
    )
    select case when exists (select 1 from saved) then 'true'::jsonb
      else to_jsonb(akadze.raise_error(${LEASE_LOST_PREFIX + jobId}, ${LEASE_LOST_CODE})) end as r`;
}
