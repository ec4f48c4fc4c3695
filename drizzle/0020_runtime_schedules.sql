ALTER TABLE "akadze"."schedules" ADD COLUMN "runtime" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "tenant" text;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "args" jsonb;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "cron" text;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "timezone" text;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "every_ms" bigint;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "catch_up" smallint DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "skip_overlap" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "paused" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "revision" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "next_slot" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "last_job_id" bigint;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "created_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "akadze"."schedules" ADD COLUMN "updated_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
CREATE INDEX "schedules_due_idx" ON "akadze"."schedules" USING btree ("next_slot") WHERE "akadze"."schedules"."runtime" and not "akadze"."schedules"."paused";--> statement-breakpoint
CREATE INDEX "schedules_tenant_idx" ON "akadze"."schedules" USING btree ("tenant","name") WHERE "akadze"."schedules"."tenant" is not null;