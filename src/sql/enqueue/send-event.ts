import { sql, type SQL } from "drizzle-orm";
import { JOBS_CHANNEL } from "./enqueue.js";

/** What `sendEvent` did. */
export interface SentEvent {
  /** Waiting steps that received the event. */
  delivered: number;
  /** Parked runs made due now (a run already running takes the event when it next reaches the step). */
  woken: number;
}

/** A task subscribed to an event: the columns its jobs take. */
export interface SubscriberColumns {
  task: string;
  queue: string;
  priority: number;
  maxAttempts: number;
}

/** An event sent through an app: its id, and the tasks it starts. */
export interface AppEvent {
  id: string;
  subscribers: readonly SubscriberColumns[];
}

/**
 * Delivers an event to every workflow step waiting for it whose match the payload contains (and whose
 * timeout has not passed) in a run that is still live (queued or running: a cancelled or failed run's wait
 * is left as it was), and makes those runs due now: one statement, so it commits or rolls back with the
 * caller's transaction. Answers `{ delivered, woken }`.
 *
 * With `app` (an event sent through `app.sendEvent`), the statement first records the event's name and id in
 * akadze.sent_events; only when that row is new does it wake the waits and insert one job per subscriber (the
 * payload as its args, due at `now`), answering `{ repeated, delivered, woken, started }`. A send of an id that
 * another transaction is sending waits for its commit on the primary key, then finds the id there and does
 * nothing, so each event starts each subscriber once.
 */
export function sendEventStatement(name: string, payload: unknown, now: SQL, app?: AppEvent): SQL {
  const json = JSON.stringify(payload ?? null);
  const waits = sql`delivered as (
      update akadze.steps s set state = 'done', result = ${json}::jsonb, finished_at = ${now}
      where s.state = 'waiting' and s.kind = 'event' and s.event = ${name} and s.wake_at > ${now}
        and (s.match is null or ${json}::jsonb @> s.match)
        -- akadze.jobs holds only queued and running jobs; a finished one's steps stay as they ended.
        and exists (select 1 from akadze.jobs j where j.id = s.job_id)
        ${app ? sql`and exists (select 1 from recorded)` : sql``}
      returning s.job_id
    ),
    woken as (
      update akadze.jobs j set run_at = least(j.run_at, ${now})
      where j.id in (select job_id from delivered) and j.state = 'queued'
      returning j.id
    )`;
  if (!app) {
    return sql`
    with ${waits}
    select jsonb_build_object('delivered', (select count(*) from delivered), 'woken', (select count(*) from woken)) as r`;
  }
  const subscribers = JSON.stringify(app.subscribers.map((s, ord) => ({ task: s.task, queue: s.queue, priority: s.priority, max_attempts: s.maxAttempts, ord })));
  const args = JSON.stringify(payload ?? {});
  return sql`
    with recorded as (
      insert into akadze.sent_events (name, id, sent_at) values (${name}::text, ${app.id}::text, ${now})
      on conflict (name, id) do nothing
      returning 1
    ),
    started as (
      insert into akadze.jobs (task, queue, args, priority, max_attempts, run_at, created_at)
      select s.task, s.queue, ${args}::jsonb, s.priority, s.max_attempts, ${now}, now()
      from jsonb_to_recordset(${subscribers}::jsonb) as s(task text, queue text, priority smallint, max_attempts int, ord int)
      where exists (select 1 from recorded)
      order by s.ord
      returning id, task, queue
    ),
    -- Wakes listening workers when the send commits, as an enqueue does.
    notified as (select pg_notify(${JOBS_CHANNEL}, q.queue) from (select distinct queue from started) q),
    ${waits}
    select jsonb_build_object('repeated', not exists (select 1 from recorded), 'delivered', (select count(*) from delivered),
      'woken', (select count(*) from woken), 'notified', (select count(*) from notified),
      'started', (select coalesce(jsonb_agg(jsonb_build_object('task', task, 'id', id) order by id), '[]'::jsonb) from started)) as r`;
}
