CREATE TABLE "akadze"."owners" (
	"owner" text PRIMARY KEY NOT NULL,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
DROP INDEX "akadze"."jobs_lease_idx";--> statement-breakpoint
CREATE INDEX "jobs_lease_idx" ON "akadze"."jobs" USING btree ("lease_expires_at") WHERE "akadze"."jobs"."state" = 'running' and "akadze"."jobs"."lease_expires_at" is not null;