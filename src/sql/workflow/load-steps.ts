import { sql, type SQL } from "drizzle-orm";
import type { ErrorEntry } from "../../core/errors.js";

/** A step as stored in `akadze.steps` and shown by `getJob` (timestamps are ISO strings). */
export interface StoredStep {
  name: string;
  /** Its position in the handler's order of step calls, from 0 (a `patch` marker: the position it was reached at; the `version` entry: -1). */
  seq: number;
  /** What the handler called; `patch` is a `step.patched` marker and `version` the workflow version the run started on (docs/workflows.md#changing-a-workflow-while-runs-are-parked). */
  kind: "run" | "sleep" | "event" | "jobs" | "patch" | "version";
  /** `done`; `retrying` (failed, parked for its backoff); `failed` (gave up); `waiting` (a sleep or event wait); `timed_out` (a wait that got no event). */
  state: "done" | "retrying" | "failed" | "waiting" | "timed_out";
  result: unknown;
  /** False when the step returned nothing (`undefined`). */
  hasResult: boolean;
  errors: ErrorEntry[];
  /** Runs of this step so far (since the workflow was last requeued). */
  attempts: number;
  /** When a sleep ends or a wait times out. */
  wakeAt: string | null;
  /** The event an event wait waits for, and the object its payload must contain. */
  event: string | null;
  match: unknown;
  createdAt: string;
  finishedAt: string | null;
}

/** The JSON a stored step is read as (`StoredStep`), from a row of akadze.steps named `s`. */
const stepJson = sql`jsonb_build_object('name', s.name, 'seq', s.seq, 'kind', s.kind, 'state', s.state, 'result', s.result,
      'hasResult', s.result is not null, 'errors', s.errors, 'attempts', s.attempts, 'wakeAt', s.wake_at, 'event', s.event, 'match', s.match,
      'createdAt', s.created_at, 'finishedAt', s.finished_at)`;

/**
 * A workflow's stored steps, in the order the handler first reached them, as one jsonb array (a `patch`
 * marker before the step at its position).
 */
export function loadStepsStatement(jobId: number): SQL {
  return sql`
    select coalesce(jsonb_agg(${stepJson} order by s.seq, s.kind <> 'patch'), '[]'::jsonb) as r
    from akadze.steps s where s.job_id = ${jobId}`;
}

/**
 * The same, for a run of a versioned workflow: a run that has stored nothing yet (it starts now) records the
 * version it starts on as its first entry (kind `version`, name '', which no step can have, seq -1), in the
 * same statement, so a versioned workflow costs no extra round trip. Only while `owner` holds the lease: a
 * run that lost it records nothing (and its steps' saves fail as they would anyway).
 */
export function loadStepsStartingStatement(owner: string, jobId: number, at: SQL, version: number): SQL {
  return sql`
    with owned as (select id from akadze.jobs where id = ${jobId} and state = 'running' and lease_owner = ${owner} for share),
    started as (
      insert into akadze.steps as s (job_id, name, seq, kind, state, result, attempts, created_at, finished_at)
      select id, '', -1, 'version', 'done', ${JSON.stringify(version)}::jsonb, 1, ${at}, ${at} from owned
      where not exists (select 1 from akadze.steps where job_id = ${jobId})
      on conflict (job_id, name) do nothing
      returning s.*
    )
    -- The statement's snapshot does not see its own insert: the started row comes from its returning.
    select coalesce(jsonb_agg(${stepJson} order by s.seq, s.kind <> 'patch'), '[]'::jsonb) as r
    from (select * from akadze.steps where job_id = ${jobId} union all select * from started) s`;
}
