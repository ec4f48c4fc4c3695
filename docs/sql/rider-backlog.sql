-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.
-- The backlog rider: what it adds to a claim (src/runtime/riders.ts); $n are bound per claim.
-- After the core's `claimed`:
backlog as (
      select least((select count(*) from (select 1 from akadze.jobs j where j.fair_tag is null and j.state = 'queued' and j.run_at <= now() and j.task = any(array(select jsonb_array_elements_text($1::jsonb)))
        and true
        and j.queue not in (select name from akadze.queues where paused) and (j.limit_key is null or not exists (select 1 from akadze.limits l where l.key = j.limit_key)) limit 1024) b) + (select count(*) from (select 1 from akadze.jobs j where j.fair_tag is not null and j.state = 'queued' and j.run_at <= now() and j.task = any(array(select jsonb_array_elements_text($2::jsonb)))
        and true
        and j.queue not in (select name from akadze.queues where paused) and (j.limit_key is null or not exists (select 1 from akadze.limits l where l.key = j.limit_key)) limit 1024) b), 1024)
         as n
    )
-- Reported in the answer:
'backlog', (select n from backlog)
