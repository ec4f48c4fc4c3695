CREATE TABLE "akadze"."failed_jobs" (
	"id" bigint PRIMARY KEY NOT NULL,
	"task" text NOT NULL,
	"queue" text NOT NULL,
	"args" jsonb NOT NULL,
	"state" text NOT NULL,
	"priority" smallint NOT NULL,
	"attempt" integer NOT NULL,
	"max_attempts" integer NOT NULL,
	"run_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone,
	"unique_key" text,
	"limit_key" text,
	"limit_wait_ms" bigint,
	"cancel_requested" boolean NOT NULL,
	"errors" jsonb NOT NULL,
	"result" jsonb,
	"created_at" timestamp with time zone NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone NOT NULL,
	CONSTRAINT "failed_jobs_state_check" CHECK ("akadze"."failed_jobs"."state" = 'failed')
);
--> statement-breakpoint
CREATE TABLE "akadze"."job_history" (
	"id" bigint NOT NULL,
	"task" text NOT NULL,
	"queue" text NOT NULL,
	"args" jsonb NOT NULL,
	"state" text NOT NULL,
	"priority" smallint NOT NULL,
	"attempt" integer NOT NULL,
	"max_attempts" integer NOT NULL,
	"run_at" timestamp with time zone NOT NULL,
	"expires_at" timestamp with time zone,
	"unique_key" text,
	"limit_key" text,
	"limit_wait_ms" bigint,
	"cancel_requested" boolean NOT NULL,
	"errors" jsonb NOT NULL,
	"result" jsonb,
	"created_at" timestamp with time zone NOT NULL,
	"started_at" timestamp with time zone,
	"finished_at" timestamp with time zone NOT NULL,
	CONSTRAINT "job_history_state_check" CHECK ("akadze"."job_history"."state" in ('succeeded', 'cancelled', 'rate_limited'))
) PARTITION BY RANGE ("finished_at");
--> statement-breakpoint
ALTER TABLE "akadze"."jobs" DROP CONSTRAINT "jobs_state_check";--> statement-breakpoint
CREATE INDEX "failed_jobs_finished_idx" ON "akadze"."failed_jobs" USING btree ("finished_at");--> statement-breakpoint
CREATE INDEX "job_history_id_idx" ON "akadze"."job_history" USING btree ("id");--> statement-breakpoint
CREATE INDEX "job_history_finished_idx" ON "akadze"."job_history" USING brin ("finished_at");--> statement-breakpoint
CREATE INDEX "job_history_limit_idx" ON "akadze"."job_history" USING btree ("limit_key","started_at") WHERE "akadze"."job_history"."limit_key" is not null;--> statement-breakpoint
--> statement-breakpoint
-- (Hand-written from here on: drizzle-kit declares neither partitions nor functions nor views.)
-- Rows that finish when no partition covers their time land here, so an insert never fails; they are
-- pruned row by row (maintain_history). Normally empty.
CREATE TABLE "akadze"."job_history_default" PARTITION OF "akadze"."job_history" DEFAULT;
--> statement-breakpoint
-- A partition of job_history for finished_at in [p_lo, p_hi) (epoch seconds), named by its range.
-- False when it cannot be made without moving rows: the default partition holds rows of that range, or
-- another partition overlaps it. A role that may not create it gets insufficient_privilege.
CREATE OR REPLACE FUNCTION "akadze"."create_history_partition"(p_lo bigint, p_hi bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE format('CREATE TABLE akadze.%I PARTITION OF akadze.job_history FOR VALUES FROM (to_timestamp(%s)) TO (to_timestamp(%s))',
    format('job_history_%s_%s', p_lo, p_hi), p_lo, p_hi);
  RETURN true;
EXCEPTION
  WHEN check_violation OR invalid_object_definition OR duplicate_table OR unique_violation THEN RETURN false;
END $$;
--> statement-breakpoint
-- Retention of job_history in one statement (so it runs over neon-http): drops the partitions that ended
-- before p_now - p_keep_ms, creates partitions of p_width_s seconds ahead up to p_now + p_ahead_s, and
-- deletes up to p_batch old rows of the default partition (or of a plain table, or of partitions this
-- role may not drop). A partition that cannot be locked within 200 ms waits for the next call.
CREATE OR REPLACE FUNCTION "akadze"."maintain_history"(p_now timestamptz, p_keep_ms float8, p_width_s bigint, p_ahead_s bigint, p_batch integer)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  v_now float8 := extract(epoch from p_now);
  v_cutoff timestamptz := p_now - p_keep_ms * interval '1 millisecond';
  v_part record;
  v_last bigint;
  v_lo bigint;
  v_hi bigint;
  v_denied_parts bigint[] := '{}';
  v_n integer;
  v_dropped integer := 0;
  v_created integer := 0;
  v_pruned integer := 0;
  v_denied text;
  v_partitioned boolean;
BEGIN
  -- Dropping a partition locks all of job_history for a moment: wait only briefly behind a long transaction.
  PERFORM set_config('lock_timeout', '200ms', true);
  SELECT c.relkind = 'p' INTO v_partitioned FROM pg_class c WHERE c.oid = 'akadze.job_history'::regclass;
  IF v_partitioned THEN
    FOR v_part IN
      SELECT c.relname, split_part(c.relname, '_', 3)::bigint AS lo, split_part(c.relname, '_', 4)::bigint AS hi
      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'akadze.job_history'::regclass AND c.relname ~ '^job_history_[0-9]+_[0-9]+$'
    LOOP
      IF v_part.hi <= extract(epoch from v_cutoff) THEN
        BEGIN
          EXECUTE format('DROP TABLE akadze.%I', v_part.relname);
          v_dropped := v_dropped + 1;
        EXCEPTION
          WHEN insufficient_privilege THEN v_denied := SQLERRM; v_denied_parts := v_denied_parts || array[v_part.lo, v_part.hi];
          WHEN lock_not_available OR undefined_table THEN NULL;
        END;
      ELSE
        v_last := greatest(v_last, v_part.hi);
      END IF;
    END LOOP;
    v_lo := greatest(coalesce(v_last, 0), (floor(v_now / p_width_s) * p_width_s)::bigint);
    IF v_lo <= v_now THEN
      -- No partition covers now (the first maintenance, or one that came late): rows of this window went to
      -- the default partition, so the first partition starts just after the newest of them.
      EXECUTE 'SELECT floor(extract(epoch from max(finished_at)))::bigint + 1 FROM akadze.job_history_default WHERE finished_at >= to_timestamp($1)'
        INTO v_hi USING v_lo;
      v_lo := greatest(v_lo, coalesce(v_hi, v_lo));
    END IF;
    WHILE v_denied IS NULL AND v_lo < v_now + p_ahead_s LOOP
      v_hi := ((floor(v_lo::float8 / p_width_s) + 1) * p_width_s)::bigint;
      BEGIN
        IF akadze.create_history_partition(v_lo, v_hi) THEN v_created := v_created + 1; END IF;
      EXCEPTION
        WHEN insufficient_privilege THEN v_denied := SQLERRM;
        WHEN lock_not_available THEN EXIT;
      END;
      v_lo := v_hi;
    END LOOP;
    -- The default partition's old rows, directly (it is small); partitions this role may not drop, through
    -- the parent (which is what it was granted), each by its own range.
    BEGIN
      EXECUTE 'WITH d AS (DELETE FROM akadze.job_history_default WHERE id IN (SELECT id FROM akadze.job_history_default WHERE finished_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED) AND finished_at < $1 RETURNING 1) SELECT count(*) FROM d'
        INTO v_n USING v_cutoff, p_batch;
      v_pruned := v_pruned + v_n;
    EXCEPTION WHEN insufficient_privilege THEN v_denied := SQLERRM;
    END;
    FOR i IN 1 .. coalesce(array_length(v_denied_parts, 1), 0) / 2 LOOP
      WITH d AS (DELETE FROM akadze.job_history WHERE finished_at >= to_timestamp(v_denied_parts[2 * i - 1]) AND finished_at < to_timestamp(v_denied_parts[2 * i])
        AND id IN (SELECT id FROM akadze.job_history WHERE finished_at >= to_timestamp(v_denied_parts[2 * i - 1]) AND finished_at < to_timestamp(v_denied_parts[2 * i])
          LIMIT p_batch FOR UPDATE SKIP LOCKED) RETURNING 1)
      SELECT count(*) INTO v_n FROM d;
      v_pruned := v_pruned + v_n;
    END LOOP;
  ELSE
    WITH d AS (DELETE FROM akadze.job_history WHERE id IN (SELECT id FROM akadze.job_history WHERE finished_at < v_cutoff LIMIT p_batch FOR UPDATE SKIP LOCKED)
      AND finished_at < v_cutoff RETURNING 1)
    SELECT count(*) INTO v_n FROM d;
    v_pruned := v_n;
  END IF;
  RETURN jsonb_build_object('dropped', v_dropped, 'created', v_created, 'pruned', v_pruned, 'denied', v_denied, 'partitioned', v_partitioned);
END $$;
--> statement-breakpoint
-- Whether maintain_history has work (read in a claim, so the maintenance is sent only then): a partition
-- past the horizon, partitions that cover less than one more width ahead of p_now, or a default partition
-- (or a plain table) that holds rows past the horizon, over 1,000 rows, or rows older than one width (at
-- most a minute). Partitions are made lazily: a database whose jobs never finish needs none, and a test's
-- clock that does not move finds nothing due.
CREATE OR REPLACE FUNCTION "akadze"."history_due"(p_now timestamptz, p_keep_ms float8, p_width_s bigint) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_cutoff timestamptz := p_now - p_keep_ms * interval '1 millisecond';
  v_first bigint;
  v_last bigint;
  v_due boolean;
BEGIN
  IF (SELECT c.relkind FROM pg_class c WHERE c.oid = 'akadze.job_history'::regclass) <> 'p' THEN
    EXECUTE 'SELECT EXISTS (SELECT 1 FROM akadze.job_history WHERE finished_at < $1)' INTO v_due USING v_cutoff;
    RETURN v_due;
  END IF;
  SELECT min(split_part(c.relname, '_', 4)::bigint), max(split_part(c.relname, '_', 4)::bigint) INTO v_first, v_last
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  WHERE i.inhparent = 'akadze.job_history'::regclass AND c.relname ~ '^job_history_[0-9]+_[0-9]+$';
  IF v_first <= extract(epoch from v_cutoff) OR v_last < extract(epoch from p_now) + p_width_s THEN
    RETURN true;
  END IF;
  EXECUTE 'SELECT EXISTS (SELECT 1 FROM akadze.job_history_default WHERE finished_at < $1)
      OR (SELECT count(*) FROM (SELECT 1 FROM akadze.job_history_default LIMIT 1001) x) > 1000'
    INTO v_due USING greatest(v_cutoff, p_now - least(p_width_s, 60) * interval '1 second');
  RETURN v_due;
END $$;
--> statement-breakpoint
-- The finished jobs of the schema before: the partitions their finish times need (a day each, the last
-- ending now, so the engine's own partitions start after it), then the rows themselves.
DO $$
DECLARE
  v_lo bigint;
  v_stop bigint := ceil(extract(epoch from now()));
BEGIN
  SELECT (floor(extract(epoch from min(finished_at)) / 86400) * 86400)::bigint INTO v_lo
  FROM akadze.jobs WHERE state IN ('succeeded', 'cancelled', 'rate_limited') AND finished_at <= now();
  WHILE v_lo IS NOT NULL AND v_lo < v_stop LOOP
    PERFORM akadze.create_history_partition(v_lo, least(v_lo + 86400, v_stop));
    v_lo := least(v_lo + 86400, v_stop);
  END LOOP;
END $$;
--> statement-breakpoint
WITH moved AS (DELETE FROM "akadze"."jobs" WHERE "state" IN ('succeeded', 'cancelled', 'rate_limited') RETURNING *)
INSERT INTO "akadze"."job_history" ("id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at",
  "unique_key", "limit_key", "limit_wait_ms", "cancel_requested", "errors", "result", "created_at", "started_at", "finished_at")
SELECT "id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at",
  "unique_key", "limit_key", "limit_wait_ms", "cancel_requested", "errors", "result", "created_at", "started_at", coalesce("finished_at", now())
FROM moved;
--> statement-breakpoint
WITH moved AS (DELETE FROM "akadze"."jobs" WHERE "state" = 'failed' RETURNING *)
INSERT INTO "akadze"."failed_jobs" ("id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at",
  "unique_key", "limit_key", "limit_wait_ms", "cancel_requested", "errors", "result", "created_at", "started_at", "finished_at")
SELECT "id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at",
  "unique_key", "limit_key", "limit_wait_ms", "cancel_requested", "errors", "result", "created_at", "started_at", coalesce("finished_at", now())
FROM moved;
--> statement-breakpoint
DROP INDEX "akadze"."jobs_finished_idx";
--> statement-breakpoint
ALTER TABLE "akadze"."jobs" ADD CONSTRAINT "jobs_state_check" CHECK ("akadze"."jobs"."state" in ('queued', 'running'));
--> statement-breakpoint
-- Every job whatever its state, with a job's columns (what getJob, listJobs, the CLI and the metrics read).
CREATE OR REPLACE VIEW "akadze"."all_jobs" AS
SELECT "id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at", "unique_key", "limit_key",
  "limit_wait_ms", "lease_owner", "lease_expires_at", "cancel_requested", "errors", "result", "created_at", "started_at", "finished_at"
FROM "akadze"."jobs"
UNION ALL
SELECT "id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at", "unique_key", "limit_key",
  "limit_wait_ms", NULL::text, NULL::timestamptz, "cancel_requested", "errors", "result", "created_at", "started_at", "finished_at"
FROM "akadze"."job_history"
UNION ALL
SELECT "id", "task", "queue", "args", "state", "priority", "attempt", "max_attempts", "run_at", "expires_at", "unique_key", "limit_key",
  "limit_wait_ms", NULL::text, NULL::timestamptz, "cancel_requested", "errors", "result", "created_at", "started_at", "finished_at"
FROM "akadze"."failed_jobs";