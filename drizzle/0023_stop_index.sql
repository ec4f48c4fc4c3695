-- Queued jobs to cancel before they are due (a cancel request on a job back in the queue, an `expiresAt`), by the
-- moment they must be cancelled: a claim finds those whose moment passed without reading the jobs not due yet.
CREATE INDEX IF NOT EXISTS "jobs_stop_idx" ON "akadze"."jobs" USING btree ((case when "cancel_requested" then '-infinity'::timestamptz else "expires_at" end)) WHERE "akadze"."jobs"."state" = 'queued' and ("akadze"."jobs"."expires_at" is not null or "akadze"."jobs"."cancel_requested");--> statement-breakpoint
-- (Hand-written.) Building an index sets the table's row count to what it holds: on an empty table, 0, and the
-- planner then takes the first backlog for a few rows and reads all of it (the statistics 0022 gave a fresh
-- install are undone). An empty queue table gets them again, as 0022 made them.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM akadze.jobs) THEN
    INSERT INTO akadze.jobs (id, task) OVERRIDING SYSTEM VALUE SELECT -g, 'akadze.statistics' FROM generate_series(1, 100) g;
    ANALYZE akadze.jobs;
    DELETE FROM akadze.jobs WHERE id < 0;
  END IF;
END $$;
