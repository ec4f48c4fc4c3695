-- (Hand-written order.) The plain scan's two indexes leave out keyed jobs with a turn (jobs_tag_idx holds those).
-- Each is built under a new name before the old one is dropped: claims beside the migration keep reading the old
-- index while the new one is built (the build holds off writes, as any index build in a transaction does), and the
-- drop's exclusive lock lasts only till the commit right after it.
CREATE INDEX "jobs_claim_idx_0025" ON "akadze"."jobs" USING btree ("queue","priority" DESC NULLS LAST,"run_at","id") WHERE "akadze"."jobs"."state" = 'queued' and "akadze"."jobs"."fair_tag" is null;--> statement-breakpoint
CREATE INDEX "jobs_due_idx_0025" ON "akadze"."jobs" USING btree ("priority" DESC NULLS LAST,"run_at","id") WHERE "akadze"."jobs"."state" = 'queued' and "akadze"."jobs"."fair_tag" is null;--> statement-breakpoint
DROP INDEX "akadze"."jobs_claim_idx";--> statement-breakpoint
DROP INDEX "akadze"."jobs_due_idx";--> statement-breakpoint
ALTER INDEX "akadze"."jobs_claim_idx_0025" RENAME TO "jobs_claim_idx";--> statement-breakpoint
ALTER INDEX "akadze"."jobs_due_idx_0025" RENAME TO "jobs_due_idx";--> statement-breakpoint
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
