import { sql, type SQL } from "drizzle-orm";
import type { ErrorEntry } from "../core/errors.js";
import { startJobsCtes, startReport, type StartResult } from "./start.js";
import { msInterval, mustStop } from "./time.js";
import { lockOwnedInIdOrder } from "./heartbeat.js";

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
  /** The attempt that ended (not sent). */
  attempt?: number;
  /** The job's task and queue (not sent): a succeeded job is answered by its id alone. */
  task?: string;
  queue?: string;
}

/** A job the completion statement moved, for summaries and transition hooks. */
export interface CompletedJob {
  id: number; task: string; queue: string; attempt: number; from: "running"; to: string; kind: OutcomeKind;
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

const STOP = mustStop(sql`o_now.now`);
const REFUND = sql`(o.kind in ('snooze', 'release') or (o.kind in ('error', 'fail', 'snooze', 'cancel') and ${STOP}))`;

/**
 * One round trip that settles an invocation's jobs: records many outcomes, each only if `owner` still holds
 * the job's lease, frees the limit slots of every job that left `running`, and starts the next prefetched
 * jobs (`start`). `after` adds CTEs (`name as (...)`) that may read `done` (id, task, queue, attempt,
 * state, kind), e.g. the workers registry count.
 */
export function settleStatement(owner: string, now: SQL, outcomes: Outcome[], start: StartRequest | null = null, after: SQL[] = []): SQL {
  // A job that succeeded without a result is sent as its id alone: most are, and the full record cost more
  // to send and to read than the rest of the statement.
  const plain = (o: Outcome) => o.kind === "succeeded" && (o.result === undefined || o.result === null) && !o.error;
  const succeededIds = JSON.stringify(outcomes.filter(plain).map((o) => o.id));
  const payload = JSON.stringify(outcomes.filter((o) => !plain(o)).map((o) => ({
    id: o.id, kind: o.kind, result: o.result === undefined ? null : o.result, error: o.error ?? null, delay_ms: o.delayMs ?? 0,
  })));
  const newState = sql`case
      when o.kind = 'succeeded' then 'succeeded'
      when o.kind = 'release' then case when j.cancel_requested then 'cancelled' else 'queued' end
      when o.kind = 'cancel' or ${STOP} then 'cancelled'
      when o.kind = 'snooze' then 'queued'
      when o.kind = 'fail' or j.attempt >= j.max_attempts then 'failed'
      else 'queued' end`;
  // Every row the statement changes (outcomes and starts) is locked first, in id order, as the heartbeat does.
  const lockIds = JSON.stringify([...outcomes.map((o) => o.id), ...(start?.ids ?? [])]);
  const locked = sql`j.id = any((select ids from settle_locked)::bigint[])`;
  const starts = start && start.ids.length > 0 ? startJobsCtes(owner, now, start.ids, start.limited, locked) : [];
  const ctes = [...starts, ...after].map((cte) => sql`, ${cte}`);
  return sql`
    with ${lockOwnedInIdOrder("settle_locked", owner, sql`${lockIds}::jsonb`)},
    o_now as (select ${now} as now),
    o as (select value::bigint as id, 'succeeded'::text as kind, null::jsonb as result, null::jsonb as error, 0::float8 as delay_ms
          from jsonb_array_elements_text(${succeededIds}::jsonb)
          union all
          select * from jsonb_to_recordset(${payload}::jsonb) as o(id bigint, kind text, result jsonb, error jsonb, delay_ms float8)),
    done as (
      update akadze.jobs j set
        state = ${newState},
        attempt = case when ${REFUND} then j.attempt - 1 else j.attempt end,
        run_at = case when o.kind in ('error', 'snooze') and ${newState} = 'queued' then o_now.now + ${msInterval(sql`o.delay_ms`)} else j.run_at end,
        finished_at = case when ${newState} in ('queued') then null else o_now.now end,
        started_at = case when o.kind = 'release' then null else j.started_at end,
        result = case when o.kind = 'succeeded' then o.result else j.result end,
        errors = case when o.error is not null and not ${REFUND} then j.errors || jsonb_build_array(o.error) else j.errors end,
        lease_owner = null, lease_expires_at = null
      from o, o_now
      where j.id = o.id and ${locked} and j.state = 'running' and j.lease_owner = ${owner}
      returning j.id, j.task, j.queue, j.attempt, j.state, o.kind, o.error
    ),
    -- (A data-modifying CTE runs to completion whether or not the result reads it. The exists is checked
    -- once: while no limit slot is taken, the done jobs are not looked up one by one.)
    freed as (update akadze.limit_slots s set job_id = null from done d where s.job_id = d.id
      and exists (select 1 from akadze.limit_slots t where t.job_id is not null))
    ${sql.join(ctes, sql` `)}
    select json_build_object(
      'succeeded', coalesce((select json_agg(id) from done where state = 'succeeded'), '[]'::json),
      'done', coalesce((select json_agg(json_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt,
        'from', 'running', 'to', state, 'kind', kind,
        'error', case when error is not null then json_build_object('kind', error->>'kind', 'message', error->>'message') end))
        from done where state <> 'succeeded'), '[]'::json),
      'start', ${starts.length > 0 ? startReport() : sql`null::json`}) as r`;
}
