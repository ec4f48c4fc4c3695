CREATE SCHEMA "akadze";
--> statement-breakpoint
CREATE TABLE "akadze"."jobs" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "akadze"."jobs_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"task" text NOT NULL,
	"queue" text DEFAULT 'default' NOT NULL,
	"args" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"state" text DEFAULT 'queued' NOT NULL,
	"priority" smallint DEFAULT 0 NOT NULL,
	"attempt" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer DEFAULT 3 NOT NULL,
	"run_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone,
	"unique_key" text,
	"limit_key" text,
	"lease_owner" text,
	"lease_expires_at" timestamp with time zone,
	"cancel_requested" boolean DEFAULT false NOT NULL,
	"errors" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"result" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone,
	CONSTRAINT "jobs_state_check" CHECK ("akadze"."jobs"."state" in ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
	CONSTRAINT "jobs_attempts_check" CHECK ("akadze"."jobs"."max_attempts" >= 1 and "akadze"."jobs"."attempt" >= 0)
);
--> statement-breakpoint
CREATE TABLE "akadze"."limit_slots" (
	"key" text NOT NULL,
	"slot" integer NOT NULL,
	"job_id" bigint,
	CONSTRAINT "limit_slots_key_slot_pk" PRIMARY KEY("key","slot")
);
--> statement-breakpoint
CREATE TABLE "akadze"."limit_tokens" (
	"key" text NOT NULL,
	"slot" integer NOT NULL,
	"last_start" timestamp with time zone,
	CONSTRAINT "limit_tokens_key_slot_pk" PRIMARY KEY("key","slot")
);
--> statement-breakpoint
CREATE TABLE "akadze"."limits" (
	"key" text PRIMARY KEY NOT NULL,
	"max_starts" integer,
	"window_ms" bigint,
	"max_running" integer,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "akadze"."queues" (
	"name" text PRIMARY KEY NOT NULL,
	"paused" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "akadze"."schedules" (
	"name" text PRIMARY KEY NOT NULL,
	"task" text NOT NULL,
	"last_slot" timestamp with time zone,
	"seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "akadze"."workers" (
	"id" text PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"queues" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	"stopped_at" timestamp with time zone,
	"jobs_done" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX "jobs_claim_idx" ON "akadze"."jobs" USING btree ("queue","priority" DESC NULLS LAST,"run_at","id") WHERE "akadze"."jobs"."state" = 'queued';--> statement-breakpoint
CREATE INDEX "jobs_lease_idx" ON "akadze"."jobs" USING btree ("lease_expires_at") WHERE "akadze"."jobs"."state" = 'running';--> statement-breakpoint
CREATE INDEX "jobs_owner_idx" ON "akadze"."jobs" USING btree ("lease_owner") WHERE "akadze"."jobs"."state" = 'running';--> statement-breakpoint
CREATE INDEX "jobs_finished_idx" ON "akadze"."jobs" USING btree ("finished_at") WHERE "akadze"."jobs"."state" in ('succeeded', 'failed', 'cancelled');--> statement-breakpoint
CREATE UNIQUE INDEX "jobs_unique_key_active" ON "akadze"."jobs" USING btree ("unique_key") WHERE "akadze"."jobs"."state" in ('queued', 'running');--> statement-breakpoint
CREATE INDEX "limit_slots_job_idx" ON "akadze"."limit_slots" USING btree ("job_id");--> statement-breakpoint
CREATE INDEX "workers_last_seen_idx" ON "akadze"."workers" USING btree ("last_seen_at");