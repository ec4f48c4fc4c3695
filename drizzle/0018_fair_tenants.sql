CREATE TABLE "akadze"."fair_sub_cursors" (
	"tenant" text PRIMARY KEY NOT NULL,
	"key" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "akadze"."fair_weights" (
	"key" text PRIMARY KEY NOT NULL,
	"weight" integer NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "fair_weights_weight_check" CHECK ("akadze"."fair_weights"."weight" between 1 and 1000)
);
--> statement-breakpoint
DROP INDEX "akadze"."jobs_fair_idx";--> statement-breakpoint
CREATE INDEX "jobs_fair_idx" ON "akadze"."jobs" USING btree (("fair_key" collate "C"),"priority" DESC NULLS LAST,"run_at","id") WHERE "akadze"."jobs"."state" = 'queued' and "akadze"."jobs"."fair_key" is not null;