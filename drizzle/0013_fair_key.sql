CREATE TABLE "akadze"."fair_cursor" (
	"id" smallint PRIMARY KEY DEFAULT 1 NOT NULL,
	"key" text NOT NULL,
	CONSTRAINT "fair_cursor_one_row" CHECK ("akadze"."fair_cursor"."id" = 1)
);
--> statement-breakpoint
ALTER TABLE "akadze"."failed_jobs" ADD COLUMN "fair_key" text;--> statement-breakpoint
ALTER TABLE "akadze"."job_history" ADD COLUMN "fair_key" text;--> statement-breakpoint
ALTER TABLE "akadze"."jobs" ADD COLUMN "fair_key" text;--> statement-breakpoint
CREATE INDEX "jobs_fair_idx" ON "akadze"."jobs" USING btree ("fair_key","priority" DESC NULLS LAST,"run_at","id") WHERE "akadze"."jobs"."state" = 'queued' and "akadze"."jobs"."fair_key" is not null;--> statement-breakpoint
-- (Hand-written: drizzle-kit declares no views.) The view gains the fairness key, as its last column.
CREATE OR REPLACE VIEW "akadze"."all_jobs" AS
SELECT "id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at", "unique_key", "limit_key",
  "limit_wait_ms", "lease_owner", "lease_expires_at", "cancel_requested", "errors", "result", "created_at", "started_at", "finished_at", "fair_key"
FROM "akadze"."jobs"
UNION ALL
SELECT "id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at", "unique_key", "limit_key",
  "limit_wait_ms", NULL::text, NULL::timestamptz, "cancel_requested", "errors", "result", "created_at", "started_at", "finished_at", "fair_key"
FROM "akadze"."job_history"
UNION ALL
SELECT "id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at", "unique_key", "limit_key",
  "limit_wait_ms", NULL::text, NULL::timestamptz, "cancel_requested", "errors", "result", "created_at", "started_at", "finished_at", "fair_key"
FROM "akadze"."failed_jobs";
