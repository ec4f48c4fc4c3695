-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.
-- The upkeep rider: what it adds to a claim (src/runtime/riders.ts); $n are bound per claim.
-- Reported in the answer:
'stale', (select count(*) from claimed) >= $1 and exists (
      select 1 from pg_class c where c.oid = 'akadze.jobs'::regclass
        and case when c.reltuples < 0 then pg_relation_size(c.oid) > 262144
                 else pg_stat_get_mod_since_analyze(c.oid) > 10000 + 0.05 * c.reltuples
                   and coalesce(greatest(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid)) < now() - interval '10 seconds', true) end),
'vacuum', ($1::boolean and pg_stat_get_dead_tuples('akadze.jobs'::regclass) > 5000 + 2 * greatest(
      (select reltuples from pg_class where oid = 'akadze.jobs'::regclass), 0))
