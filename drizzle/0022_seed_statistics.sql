-- (Hand-written.) Planner statistics for a queue table that has none: a fresh install, or a table nothing has
-- analyzed yet. Without them Postgres takes 1 job in 200 to be queued (its guess for `state = 'queued'` on a column
-- with no statistics), so a claim over a backlog reads and sorts every queued job to pick its batch instead of
-- reading the batch off jobs_due_idx, and the first burst a new install takes costs each claim the whole queue
-- until an ANALYZE has run.
-- A table with jobs in it is analyzed. An empty one gets the statistics of a queue whose jobs are all queued and
-- due: rows inserted, analyzed and deleted by this one statement (no other session ever sees them; their ids are
-- below zero, so the ids jobs get are unchanged). The first ANALYZE of real jobs (the claim's upkeep rider,
-- autovacuum) replaces them.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_stats WHERE schemaname = 'akadze' AND tablename = 'jobs') THEN
    IF EXISTS (SELECT 1 FROM akadze.jobs) THEN
      ANALYZE akadze.jobs;
    ELSE
      INSERT INTO akadze.jobs (id, task) OVERRIDING SYSTEM VALUE SELECT -g, 'akadze.statistics' FROM generate_series(1, 100) g;
      ANALYZE akadze.jobs;
      DELETE FROM akadze.jobs WHERE id < 0;
    END IF;
  END IF;
END $$;
