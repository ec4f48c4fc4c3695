import { sql, type SQL } from "drizzle-orm";

/**
 * Gives every running job of the key a slot (a limit set while jobs run counts them) and adds free
 * slots up to `maxRunning`. After a limit is lowered below the running count the slots outnumber
 * it; the claim only grants the first `maxRunning - occupied` free slots, so the extra ones are inert.
 */
export function fillLimitSlotsStatement(key: string): SQL {
  return sql`
    with l as (select key, max_running from akadze.limits where key = ${key} and max_running is not null),
    running as (
      select j.id, row_number() over (order by j.id) as slot
      from akadze.jobs j where j.limit_key = ${key} and j.state = 'running'
    ),
    filled as (
      insert into akadze.limit_slots (key, slot, job_id)
      select l.key, r.slot, r.id from l, running r
      union all
      select l.key, (select count(*) from running) + g, null
      from l, generate_series(1, l.max_running - (select count(*) from running)) g
      returning job_id
    )
    select jsonb_build_object('slots', (select count(*) from filled), 'running', (select count(*) from filled where job_id is not null)) as r`;
}
