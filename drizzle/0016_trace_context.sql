ALTER TABLE "akadze"."failed_jobs" ADD COLUMN "trace_context" jsonb;--> statement-breakpoint
ALTER TABLE "akadze"."job_history" ADD COLUMN "trace_context" jsonb;--> statement-breakpoint
ALTER TABLE "akadze"."jobs" ADD COLUMN "trace_context" jsonb;--> statement-breakpoint
-- (Hand-written: drizzle-kit declares no views.) The view gains the trace context, as its last column.
CREATE OR REPLACE VIEW "akadze"."all_jobs" AS
SELECT "id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at", "unique_key", "limit_key",
  "limit_wait_ms", "lease_owner", "lease_expires_at", "cancel_requested", "errors", "result", "created_at", "started_at", "finished_at", "fair_key",
  "trace_context"
FROM "akadze"."jobs"
UNION ALL
SELECT "id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at", "unique_key", "limit_key",
  "limit_wait_ms", NULL::text, NULL::timestamptz, "cancel_requested", "errors", "result", "created_at", "started_at", "finished_at", "fair_key",
  "trace_context"
FROM "akadze"."job_history"
UNION ALL
SELECT "id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at", "unique_key", "limit_key",
  "limit_wait_ms", NULL::text, NULL::timestamptz, "cancel_requested", "errors", "result", "created_at", "started_at", "finished_at", "fair_key",
  "trace_context"
FROM "akadze"."failed_jobs";
