import { sql, type SQL } from "drizzle-orm";

/**
 * Delivers an event to every workflow step waiting for it whose match the payload contains (and whose
 * timeout has not passed) in a run that is still live (queued or running: a cancelled or failed run's wait
 * is left as it was), and makes those runs due now: one statement, so it commits or rolls back with the
 * caller's transaction. Answers `{ delivered, woken }`.
 */
export function sendEventStatement(name: string, payload: unknown, now: SQL): SQL {
  const json = JSON.stringify(payload ?? null);
  return sql`
    with delivered as (
      update akadze.steps s set state = 'done', result = ${json}::jsonb, finished_at = ${now}
      where s.state = 'waiting' and s.kind = 'event' and s.event = ${name} and s.wake_at > ${now}
        and (s.match is null or ${json}::jsonb @> s.match)
        -- akadze.jobs holds only queued and running jobs; a finished one's steps stay as they ended.
        and exists (select 1 from akadze.jobs j where j.id = s.job_id)
      returning s.job_id
    ),
    woken as (
      update akadze.jobs j set run_at = least(j.run_at, ${now})
      where j.id in (select job_id from delivered) and j.state = 'queued'
      returning j.id
    )
    select jsonb_build_object('delivered', (select count(*) from delivered), 'woken', (select count(*) from woken)) as r`;
}
