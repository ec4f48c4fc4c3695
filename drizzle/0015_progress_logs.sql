CREATE TABLE "akadze"."job_logs" (
	"job_id" bigint NOT NULL,
	"seq" integer NOT NULL,
	"attempt" integer NOT NULL,
	"logged_at" timestamp with time zone NOT NULL,
	"message" text NOT NULL,
	CONSTRAINT "job_logs_job_id_seq_pk" PRIMARY KEY("job_id","seq")
);
--> statement-breakpoint
CREATE TABLE "akadze"."job_progress" (
	"job_id" bigint PRIMARY KEY NOT NULL,
	"progress" jsonb,
	"progress_at" timestamp with time zone,
	"log_lines" integer DEFAULT 0 NOT NULL,
	"log_bytes" integer DEFAULT 0 NOT NULL,
	"logs_dropped" integer DEFAULT 0 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "job_progress_updated_idx" ON "akadze"."job_progress" USING btree ("updated_at");--> statement-breakpoint
-- (Hand-written: drizzle-kit declares no functions.) The progress and log lines of jobs gone from every table,
-- for the history's maintenance: only rows not written since p_before are looked at (by their index), and a
-- function, so its reads of the history are planned after the partitions the maintenance drops.
CREATE OR REPLACE FUNCTION "akadze"."prune_orphan_progress"(p_before timestamptz, p_batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_ids bigint[];
BEGIN
  SELECT coalesce(array_agg(o.job_id), '{}') INTO v_ids FROM (
    SELECT p.job_id FROM akadze.job_progress p
    WHERE p.updated_at < p_before AND NOT EXISTS (SELECT 1 FROM akadze.all_jobs a WHERE a.id = p.job_id)
    LIMIT p_batch) o;
  DELETE FROM akadze.job_logs WHERE job_id = ANY (v_ids);
  DELETE FROM akadze.job_progress WHERE job_id = ANY (v_ids);
  RETURN cardinality(v_ids);
END $$;
