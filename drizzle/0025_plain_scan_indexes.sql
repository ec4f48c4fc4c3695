-- (Hand-written lock.) The plain scan's two indexes leave out keyed jobs with a turn (jobs_tag_idx holds those).
-- The table is locked first, for the whole migration: a claim reads the jobs table before it updates it, in one
-- statement, and a migration that took a weaker lock first (an index build's, which lets reads in) and then the
-- drop's (which waits for every reader) deadlocked with such a claim (test/migrate/plain-scan-indexes.test.ts).
-- Claims, enqueues and settles wait till the commit; the builds read the live jobs only (finished ones are in the
-- history).
LOCK TABLE "akadze"."jobs" IN ACCESS EXCLUSIVE MODE;--> statement-breakpoint
DROP INDEX "akadze"."jobs_claim_idx";--> statement-breakpoint
DROP INDEX "akadze"."jobs_due_idx";--> statement-breakpoint
CREATE INDEX "jobs_claim_idx" ON "akadze"."jobs" USING btree ("queue","priority" DESC NULLS LAST,"run_at","id") WHERE "akadze"."jobs"."state" = 'queued' and "akadze"."jobs"."fair_tag" is null;--> statement-breakpoint
CREATE INDEX "jobs_due_idx" ON "akadze"."jobs" USING btree ("priority" DESC NULLS LAST,"run_at","id") WHERE "akadze"."jobs"."state" = 'queued' and "akadze"."jobs"."fair_tag" is null;--> statement-breakpoint
-- (Hand-written, as in 0023 and 0024.) Building an index sets the table's row count to what it holds: an empty
-- queue table gets the statistics 0022 gave a fresh install again.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM akadze.jobs) THEN
    INSERT INTO akadze.jobs (id, task) OVERRIDING SYSTEM VALUE SELECT -g, 'akadze.statistics' FROM generate_series(1, 100) g;
    ANALYZE akadze.jobs;
    DELETE FROM akadze.jobs WHERE id < 0;
  END IF;
END $$;
