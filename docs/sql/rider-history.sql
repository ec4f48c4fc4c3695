-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.
-- The history rider: what it adds to a claim (src/runtime/riders.ts); $n are bound per claim.
-- Reported in the answer:
'historyDue', akadze.history_due(now(), $1::float8, $2::bigint)
