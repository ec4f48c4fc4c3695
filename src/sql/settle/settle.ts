import { sql, type SQL } from "drizzle-orm";
import type { ErrorEntry } from "../../core/errors.js";
import { startJobsCtes, type StartResult } from "../claim/start.js";
import { archiveCtes } from "../history/archive.js";
import { movedJobsJson, type MovedJob } from "../control/changed-job.js";
import { msInterval, mustCancel } from "../time.js";
import { CTE, cte } from "../claim/cte-names.js";

/**
 * A CTE `name(ids)` that locks the jobs among `ids` (a jsonb array) leased to `owner`, in id order, before
 * anything else in the statement touches them: statements that lock several of an engine's jobs from two
 * connections at once (two settles, a settle and a release of unheld jobs) lock them in one order, since rows
 * locked in different orders deadlock. Statements name the rows themselves and
 * add `lockedFirst(name)` to their condition.
 */
export function lockOwnedInIdOrder(name: string, owner: string, ids: SQL): SQL {
  return sql`${sql.raw(name)} as (select array(
      select l.id from akadze.jobs l
      where l.id in (select value::bigint from jsonb_array_elements_text(${ids})) and l.state = 'running' and l.lease_owner = ${owner}
      order by l.id for update) as ids)`;
}

/**
 * The condition that takes `lockOwnedInIdOrder(name)`'s locks before the scan it filters returns its first
 * row: an init plan that Postgres checks once, as a one-time filter. (Reading the locked ids as
 * `j.id = any(ids)` did the same, but Postgres tests each row against the array element by element: with a
 * settle of 1,000 jobs, a million comparisons, a quarter of the statement's time.)
 */
export function lockedFirst(name: string): SQL {
  return sql`(select ids from ${sql.raw(name)}) is not null`;
}

/**
 * What a run ended with, as the completion statement records it:
 * - `succeeded`: result stored.
 * - `error`: an attempt spent; queued again after `delayMs`, or `failed` when no attempts remain.
 * - `fail`: an attempt spent; `failed` at once.
 * - `cancel`: `cancelled` at once.
 * - `snooze`: no attempt spent; queued again after `delayMs`.
 * - `release`: never started (budget end, shutdown); back to `queued` with the attempt refunded.
 * Any outcome but `succeeded` and `release` of a job whose cancel was requested (or that expired)
 * meanwhile becomes `cancelled` with the attempt refunded.
 */
export type OutcomeKind = "succeeded" | "error" | "fail" | "cancel" | "snooze" | "release";

export interface Outcome {
  id: number;
  kind: OutcomeKind;
  result?: unknown;
  error?: ErrorEntry;
  delayMs?: number;
  /**
   * The attempt that ended: the settle applies the outcome only to that attempt's run, never to a later
   * claim of the same job (by this engine, after its outcome committed unanswered or its lease lapsed). A plain
   * success is sent without it (its id alone is cheaper to send and read): it ends the job, and the engine
   * parks a later claim's copy until it is answered (job-life.ts), so no later run can take it for its own.
   */
  attempt: number;
  /** The job's task and queue (not sent): a succeeded job is answered by its id alone. */
  task?: string;
  queue?: string;
}

/** A job the completion statement moved, for summaries and transition hooks. */
export interface CompletedJob extends MovedJob {
  from: "running"; kind: OutcomeKind;
  error: { kind: string; message: string } | null;
}

/** Prefetched jobs to start in the same round trip (see start.ts). */
export interface StartRequest { ids: number[]; limited: boolean }

/**
 * The settle statement's answer: the ids of the jobs that succeeded (the sender knows the rest of them) and
 * every other job it moved in full.
 */
export interface SettleAnswer { succeeded: (number | string)[]; done: CompletedJob[]; start: StartResult | null }

export interface SettleResult { done: CompletedJob[]; start: StartResult | null }

/** The answer with every job it moved in full, the succeeded ones built from the outcomes sent. */
export function settleResultOf(answer: SettleAnswer, sent: Outcome[]): SettleResult {
  const byId = new Map(sent.map((o) => [o.id, o]));
  const succeeded = answer.succeeded.map((raw): CompletedJob => {
    const id = Number(raw);
    const o = byId.get(id);
    return { id, task: o?.task ?? "", queue: o?.queue ?? "", attempt: o?.attempt ?? 0, from: "running", to: "succeeded", kind: "succeeded", error: null };
  });
  return { done: [...succeeded, ...answer.done.map((d) => ({ ...d, id: Number(d.id) }))], start: answer.start };
}

const STOP = mustCancel(sql`o_now.now`);
const REFUND = sql`(o.kind in ('snooze', 'release') or (o.kind in ('error', 'fail', 'snooze', 'cancel') and ${STOP}))`;

/**
 * The outcome's fields a settle reads besides its id, with their value for a success sent as its id alone (the
 * `o` CTE: those ids, then the other outcomes' records).
 */
const OUTCOME_FIELDS = [
  { name: "kind", type: "text", plain: "'succeeded'" },
  { name: "result", type: "jsonb", plain: "null" },
  { name: "error", type: "jsonb", plain: "null" },
  { name: "delay_ms", type: "float8", plain: "0" },
  { name: "attempt", type: "int", plain: "null" },
];

/** How a settle treats what it ends. */
export interface SettleOptions {
  /** False: a succeeded job is deleted with no history row. Default true. */
  keepSucceeded?: boolean;
  /** Wake the workflows parked on the child jobs it ends (see wakeParentsCtes). Default false. */
  wakeParents?: boolean;
}

/**
 * One round trip that settles an invocation's jobs: records many outcomes, each only if `owner` still holds
 * the job's lease, frees the limit slots of every job that left `running`, and starts the next prefetched
 * jobs (`start`). A settled job leaves `akadze.jobs`: a finished one moves to the history or the dead
 * letters (`keepSucceeded: false`: a succeeded one is only deleted), one that runs again is written back
 * queued. `after` adds CTEs (`name as (...)`) that may read `done` (id, task, queue, attempt, state, kind),
 * e.g. the workers registry count.
 */
export function settleStatement(owner: string, now: SQL, outcomes: Outcome[], start: StartRequest | null = null, after: SQL[] = [],
  { keepSucceeded = true, wakeParents = false }: SettleOptions = {}): SQL {
  // A job that succeeded without a result is sent as its id alone: most are, and the full record cost more
  // to send and to read than the rest of the statement.
  const plain = (o: Outcome) => o.kind === "succeeded" && (o.result === undefined || o.result === null) && !o.error;
  const succeededIds = JSON.stringify(outcomes.filter(plain).map((o) => o.id));
  const payload = JSON.stringify(outcomes.filter((o) => !plain(o)).map((o) => ({
    id: o.id, kind: o.kind, result: o.result === undefined ? null : o.result, error: o.error ?? null, delay_ms: o.delayMs ?? 0,
    attempt: o.attempt,
  })));
  // Only successes (a burn-down's every settle, most of any): the statement leaves out what other outcomes need
  // (their errors and delays, the state's decision, the requeue, the dead letters), which was most of its
  // planning (0.52 -> 0.33 ms warm; 0.89 -> 0.66 with a start), what a settle over HTTP pays every time.
  const onlySuccesses = outcomes.every((o) => o.kind === "succeeded" && !o.error);
  // What the statement reads of each outcome: a success needs only its result and its run's attempt.
  const fields = onlySuccesses ? OUTCOME_FIELDS.filter((f) => f.name === "result" || f.name === "attempt") : OUTCOME_FIELDS;
  // The state each settled job ends in, and what the rows it ends as read of the outcome.
  const decided = onlySuccesses
    ? sql`'succeeded'::text as state, 'succeeded'::text as kind, o.result as o_result, null::jsonb as o_error, false as refund`
    : sql`case
      when o.kind = 'succeeded' then 'succeeded'
      when o.kind = 'release' then case when j.cancel_requested then 'cancelled' else 'queued' end
      when o.kind = 'cancel' or ${STOP} then 'cancelled'
      when o.kind = 'snooze' then 'queued'
      when o.kind = 'fail' or j.attempt >= j.max_attempts then 'failed'
      else 'queued' end as state, o.kind, o.result as o_result, o.error as o_error, o.delay_ms, ${REFUND} as refund`;
  // Every row the statement changes (outcomes and starts) is locked first, in id order (lockOwnedInIdOrder).
  const lockIds = JSON.stringify([...outcomes.map((o) => o.id), ...(start?.ids ?? [])]);
  const locked = lockedFirst("settle_locked");
  const starts = start && start.ids.length > 0 ? startJobsCtes(owner, now, start.ids, start.limited, locked) : null;
  const ctes = [...(starts?.ctes ?? []), ...after].map((cte) => sql`, ${cte}`);
  // The settled row as it ends: attempt refunded or not, the error appended unless refunded, the result kept.
  const ended = onlySuccesses ? sql`select id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key,
      limit_key, limit_wait_ms, cancel_requested, errors, o_result as result, created_at, started_at, at as finished_at, fair_key, trace_context
    from settled` : sql`select id, task, queue, args, state, priority,
      case when refund then attempt - 1 else attempt end as attempt, max_attempts,
      case when kind in ('error', 'snooze') and state = 'queued' then at + ${msInterval(sql`delay_ms`)} else run_at end as run_at,
      expires_at, unique_key, limit_key, limit_wait_ms, cancel_requested,
      case when o_error is not null and not refund then errors || jsonb_build_array(o_error) else errors end as errors,
      case when kind = 'succeeded' then o_result else result end as result, created_at,
      case when kind = 'release' then null else started_at end as started_at,
      at as finished_at, fair_key, trace_context
    from settled`;
  // Where the ended rows go: successes only to the history (or nowhere, keepSucceeded false); others by state.
  const archived = !onlySuccesses ? archiveCtes("settled", sql`${ended} where state <> 'queued'`, "by-state", keepSucceeded)
    : keepSucceeded ? archiveCtes("settled", ended, "history") : [];
  return sql`
    with ${lockOwnedInIdOrder("settle_locked", owner, sql`${lockIds}::jsonb`)},
    o_now as (select ${now} as now),
    -- (A plain success comes as its id alone, attempt null: it ends the job, so it cannot be mistaken for a later
    -- run's outcome; a later claim's copy of the job waits in the engine until this settle is answered, job-life.ts.)
    o as (select value::bigint as id, ${sql.raw(fields.map((f) => `${f.plain}::${f.type} as ${f.name}`).join(", "))}
          from jsonb_array_elements_text(${succeededIds}::jsonb)
          union all
          select * from jsonb_to_recordset(${payload}::jsonb) as o(id bigint, ${sql.raw(fields.map((f) => `${f.name} ${f.type}`).join(", "))})),
    -- Every settled job leaves the queue table, deciding its next state on the row it deleted (the latest
    -- version, so a cancel request that committed meanwhile counts); a job that runs again is written back.
    -- An outcome ends only the run of its attempt: the same engine may have claimed the job again since (a
    -- retried settle whose first try committed, a lease that lapsed), and that run is not this one's. (A plain
    -- success names none, see o.)
    settled as (
      delete from akadze.jobs j using o, o_now
      where j.id = o.id and ${locked} and j.state = 'running' and j.lease_owner = ${owner} and (o.attempt is null or j.attempt = o.attempt)
      returning j.id, j.task, j.queue, j.args, ${decided}, j.priority, j.attempt, j.max_attempts, j.run_at, j.expires_at,
        j.unique_key, j.limit_key, j.limit_wait_ms, j.cancel_requested, j.errors, j.result, j.created_at, j.started_at, j.fair_key, j.trace_context,
        o_now.now as at
    ),${onlySuccesses ? sql`` : sql`
    requeued as (
      insert into akadze.jobs (id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key,
        limit_wait_ms, cancel_requested, errors, result, created_at, started_at, fair_key, trace_context) overriding system value
      select id, task, queue, args, state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key,
        limit_wait_ms, cancel_requested, errors, result, created_at, started_at, fair_key, trace_context
      from (${ended}) e where e.state = 'queued'
    ),`}
    ${sql.join(archived.map((c) => sql`${c},`), sql` `)}
    ${cte("done")} as (select id, task, queue, case when refund then attempt - 1 else attempt end as attempt, state, kind, o_error as error from settled),
    -- (A data-modifying CTE runs to completion whether or not the result reads it. The exists is checked
    -- once: while no limit slot is taken, the done jobs are not looked up one by one.)
    freed as (update akadze.limit_slots s set job_id = null from ${cte("done")} d where s.job_id = d.id
      and exists (select 1 from akadze.limit_slots t where t.job_id is not null))${wakeParents ? sql`,
    ${wakeParentsCtes()}` : sql``}
    ${sql.join(ctes, sql` `)}
    select json_build_object(
      'succeeded', coalesce((select json_agg(id) from ${cte("done")} where state = 'succeeded'), '[]'::json),
      'done', ${onlySuccesses ? sql`'[]'::json` : movedJobsJson(CTE.done, "running", sql`state`, sql`, 'kind', kind,
        'error', case when error is not null then json_build_object('kind', error->>'kind', 'message', error->>'message') end`, sql`where state <> 'succeeded'`)},
      'start', ${starts?.report ?? sql`null::json`}) as r`;
}

/**
 * A workflow parked on child jobs runs again as soon as the last of them ends, not at its next poll: the
 * children this settle ended leave akadze.child_waits, and a parent still queued none of whose other
 * children is live (still in the queue table) is made due now. (The statement's snapshot still shows the
 * children it ends, hence the exclusion; a parent settled by this same statement is left to its poll.)
 */
function wakeParentsCtes(): SQL {
  return sql`child_ended as (
      delete from akadze.child_waits w using done d where w.child_id = d.id and d.state <> 'queued'
      returning w.child_id, w.parent_id
    ),
    woken as (
      update akadze.jobs p set run_at = o_now.now from o_now
      where p.id in (select parent_id from child_ended) and p.state = 'queued' and p.run_at > o_now.now
        and not exists (select 1 from akadze.child_waits w join akadze.jobs c on c.id = w.child_id
          where w.parent_id = p.id and w.child_id not in (select child_id from child_ended))
    )`;
}
