CREATE TABLE "akadze"."replays" (
	"job_id" bigint PRIMARY KEY NOT NULL,
	"replay_of" bigint NOT NULL
);
--> statement-breakpoint
-- (Hand-written: drizzle-kit declares no functions.) The origins of replayed jobs gone from every table, for
-- the history's maintenance: a function, so its reads of the history are planned after the partitions it drops.
CREATE OR REPLACE FUNCTION "akadze"."prune_orphan_replays"(p_batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_n integer;
BEGIN
  DELETE FROM akadze.replays r WHERE r.job_id IN (
    SELECT o.job_id FROM akadze.replays o
    WHERE NOT EXISTS (SELECT 1 FROM akadze.all_jobs a WHERE a.id = o.job_id)
    LIMIT p_batch);
  GET DIAGNOSTICS v_n = ROW_COUNT;
  RETURN v_n;
END $$;
