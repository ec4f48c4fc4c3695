CREATE TABLE "akadze"."steps" (
	"job_id" bigint NOT NULL,
	"name" text NOT NULL,
	"seq" integer NOT NULL,
	"kind" text NOT NULL,
	"state" text NOT NULL,
	"result" jsonb,
	"errors" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"wake_at" timestamp with time zone,
	"event" text,
	"match" jsonb,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "steps_job_id_name_pk" PRIMARY KEY("job_id","name"),
	CONSTRAINT "steps_kind_check" CHECK ("akadze"."steps"."kind" in ('run', 'sleep', 'event', 'jobs')),
	CONSTRAINT "steps_state_check" CHECK ("akadze"."steps"."state" in ('done', 'retrying', 'failed', 'waiting', 'timed_out'))
);
--> statement-breakpoint
CREATE INDEX "steps_waiting_event_idx" ON "akadze"."steps" USING btree ("event") WHERE "akadze"."steps"."state" = 'waiting' and "akadze"."steps"."kind" = 'event';