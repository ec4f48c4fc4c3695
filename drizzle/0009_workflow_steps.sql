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
CREATE INDEX "steps_waiting_event_idx" ON "akadze"."steps" USING btree ("event") WHERE "akadze"."steps"."state" = 'waiting' and "akadze"."steps"."kind" = 'event';--> statement-breakpoint
-- (Hand-written: drizzle-kit declares no functions.) Deletes the steps of up to p_batch workflow jobs that
-- are gone from every table (their history partition was dropped, or their row pruned): steps have no
-- foreign key to their job. Called by the history's maintenance after it dropped partitions, so it sees
-- the drops (a function's statements take a new snapshot).
CREATE OR REPLACE FUNCTION "akadze"."prune_orphan_steps"(p_batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_n integer;
BEGIN
  DELETE FROM akadze.steps s WHERE s.job_id IN (
    SELECT DISTINCT o.job_id FROM akadze.steps o
    WHERE NOT EXISTS (SELECT 1 FROM akadze.all_jobs a WHERE a.id = o.job_id)
    LIMIT p_batch);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  RETURN v_n;
END $$;
