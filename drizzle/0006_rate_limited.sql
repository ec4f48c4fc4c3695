ALTER TABLE "akadze"."jobs" DROP CONSTRAINT "jobs_state_check";--> statement-breakpoint
DROP INDEX "akadze"."jobs_finished_idx";--> statement-breakpoint
ALTER TABLE "akadze"."jobs" ADD COLUMN "limit_wait_ms" bigint;--> statement-breakpoint
CREATE INDEX "jobs_limit_wait_idx" ON "akadze"."jobs" USING btree ("run_at") WHERE "akadze"."jobs"."state" = 'queued' and "akadze"."jobs"."limit_wait_ms" is not null;--> statement-breakpoint
CREATE INDEX "jobs_finished_idx" ON "akadze"."jobs" USING btree ("state","finished_at") WHERE "akadze"."jobs"."state" in ('succeeded', 'failed', 'cancelled', 'rate_limited');--> statement-breakpoint
ALTER TABLE "akadze"."jobs" ADD CONSTRAINT "jobs_state_check" CHECK ("akadze"."jobs"."state" in ('queued', 'running', 'succeeded', 'failed', 'cancelled', 'rate_limited'));