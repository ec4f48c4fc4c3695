import * as v from "valibot";
import { sql, type SQL } from "drizzle-orm";
import { DurationSchema, parseDuration, type Duration } from "../core/duration.js";
import { MAX_SPAN_MS, parseOrThrow } from "../core/validate.js";
import { queryJson, type Db } from "../db/driver.js";
import { iso } from "./jobs.js";

/** A serverless invocation (one `runOnce`) or a long-lived worker process (`runWorker`). */
export type WorkerKind = "invocation" | "worker";

/** A worker not seen for this long without saying it stopped is reported `lost`. */
export const LIVE_WITHIN = "1m";
/** How often a busy worker tells the registry it is alive (its claims do it when it is not busy). */
export const WORKER_SEEN_INTERVAL = "15s";
/** `workers list` shows what is live plus what stopped within this window, by default. */
export const DEFAULT_WORKERS_SINCE = "1h";

const at = (now: Date) => sql`${now.toISOString()}::timestamptz`;

/** Upserts one registry row as seen now. */
function upsert(id: string, kind: WorkerKind, queues: string[] | null, now: Date): SQL {
  return sql`insert into akadze.workers as w (id, kind, queues, started_at, last_seen_at)
    values (${id}, ${kind}, ${JSON.stringify(queues ?? [])}::jsonb, ${at(now)}, ${at(now)})
    on conflict (id) do update set last_seen_at = greatest(w.last_seen_at, excluded.last_seen_at), stopped_at = null,
      queues = excluded.queues`;
}

/** A CTE for the claim's round trip: the invocation records itself as it claims. */
export function invocationSeenCte(id: string, queues: string[] | null, now: Date): SQL {
  return sql`akadze_seen as (${upsert(id, "invocation", queues, now)} returning w.id)`;
}

/**
 * A CTE for the completion's round trip (it reads the completion's `done` rows): counts the jobs this
 * invocation finished (releases aside) plus `alsoDone` completed on their own by completeTx, and marks it
 * stopped once it holds no other running job.
 */
export function invocationDoneCte(id: string, now: Date, alsoDone: number): SQL {
  return sql`akadze_seen as (
    update akadze.workers w set
      jobs_done = w.jobs_done + ${alsoDone}::int + (select count(*) from done where done.kind <> 'release')::int,
      last_seen_at = greatest(w.last_seen_at, ${at(now)}),
      stopped_at = case when exists (select 1 from akadze.jobs j where j.state = 'running' and j.lease_owner = ${id}
                                      and j.id not in (select id from done)) then w.stopped_at else ${at(now)} end
    where w.id = ${id}
    returning w.id)`;
}

/** A long-lived worker's own registry statements: one at start, one per interval while alive, one at stop. */
export const workerStatements = {
  started: (id: string, queues: string[] | null, now: Date): SQL => sql`${upsert(id, "worker", queues, now)} returning to_jsonb(w.id) as r`,
  seen: (id: string, now: Date, jobsDone: number): SQL => sql`update akadze.workers set
      last_seen_at = greatest(last_seen_at, ${at(now)}), jobs_done = jobs_done + ${jobsDone}::int
    where id = ${id} returning to_jsonb(id) as r`,
  stopped: (id: string, now: Date, jobsDone: number): SQL => sql`update akadze.workers set
      last_seen_at = greatest(last_seen_at, ${at(now)}), stopped_at = ${at(now)}, jobs_done = jobs_done + ${jobsDone}::int
    where id = ${id} returning to_jsonb(id) as r`,
};

/** One row of `workers list`. */
export interface WorkerRow {
  id: string;
  kind: WorkerKind;
  queues: string[];
  status: "live" | "stopped" | "lost";
  startedAt: string;
  lastSeenAt: string;
  stoppedAt: string | null;
  jobsDone: number;
  /** Jobs it holds a lease on right now. */
  running: number;
}

const ListSchema = v.strictObject({
  since: v.optional(v.pipe(DurationSchema, v.maxValue(MAX_SPAN_MS, `since must be at most ${MAX_SPAN_MS} ms`))),
  all: v.optional(v.boolean()),
  limit: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1, "limit must be at least 1"), v.maxValue(1000, "limit must be at most 1000"))),
  now: v.optional(v.date("now must be a valid Date")),
});

/**
 * The live invocations and workers plus the ones gone within `since` (default 1h), newest first. A
 * worker is live while it keeps being seen; an invocation while it holds leases, `lost` if they expired.
 * @example const rows = await listWorkers(db, { since: "15m" });
 */
export async function listWorkers(db: Db, options: { since?: Duration; all?: boolean; limit?: number; now?: Date } = {}): Promise<WorkerRow[]> {
  const o = parseOrThrow(ListSchema, options, "workers list options");
  const now = o.now ?? new Date();
  const liveCut = at(new Date(now.getTime() - parseDuration(LIVE_WITHIN)));
  const sinceCut = at(new Date(now.getTime() - (o.since ?? parseDuration(DEFAULT_WORKERS_SINCE))));
  const rows = await queryJson<WorkerRow[] | null>(db, sql`
    with w as (
      select w.*,
        (select count(*) from akadze.jobs j where j.state = 'running' and j.lease_owner = w.id and j.lease_expires_at >= ${at(now)}) as held,
        (select count(*) from akadze.jobs j where j.state = 'running' and j.lease_owner = w.id and j.lease_expires_at < ${at(now)}) as expired
      from akadze.workers w
      where ${o.all ? sql`true` : sql`(w.stopped_at is null or w.last_seen_at >= ${sinceCut})`}
    ),
    s as (
      select w.*, case
        when w.stopped_at is not null then 'stopped'
        when w.kind = 'worker' then case when w.last_seen_at >= ${liveCut} then 'live' else 'lost' end
        when w.held > 0 then 'live'
        when w.expired > 0 then 'lost'
        else 'stopped' end as status
      from w
    )
    select jsonb_agg(jsonb_build_object('id', id, 'kind', kind, 'queues', queues, 'status', status,
      'startedAt', started_at, 'lastSeenAt', last_seen_at,
      'stoppedAt', case when stopped_at is null and status = 'stopped' then last_seen_at else stopped_at end,
      'jobsDone', jobs_done, 'running', held) order by last_seen_at desc, id) as r
    from (select * from s where ${o.all ? sql`true` : sql`status = 'live' or last_seen_at >= ${sinceCut}`}
          order by last_seen_at desc, id limit ${o.limit ?? 100}) s`);
  return (rows ?? []).map((w) => ({
    id: w.id, kind: w.kind, status: w.status, queues: w.queues, running: Number(w.running), jobsDone: w.jobsDone,
    startedAt: iso(w.startedAt)!, lastSeenAt: iso(w.lastSeenAt)!, stoppedAt: iso(w.stoppedAt),
  }));
}
