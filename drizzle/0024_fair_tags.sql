ALTER TABLE "akadze"."jobs" ADD COLUMN "fair_tag" double precision;--> statement-breakpoint
ALTER TABLE "akadze"."fair_cursor" ADD COLUMN "tag" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "jobs_tag_idx" ON "akadze"."jobs" USING btree ("priority" DESC NULLS LAST,"fair_tag","run_at","id") WHERE "akadze"."jobs"."state" = 'queued' and "akadze"."jobs"."fair_tag" is not null;--> statement-breakpoint
CREATE INDEX "jobs_key_tag_idx" ON "akadze"."jobs" USING btree ("fair_key","fair_tag") WHERE "akadze"."jobs"."state" = 'queued' and "akadze"."jobs"."fair_tag" is not null;--> statement-breakpoint
CREATE INDEX "jobs_parked_idx" ON "akadze"."jobs" USING btree ("run_at") WHERE "akadze"."jobs"."state" = 'queued' and "akadze"."jobs"."fair_key" is not null and "akadze"."jobs"."fair_tag" is null;--> statement-breakpoint
-- (Hand-written.) The claims' virtual time has its row from the start: a claim only updates it (skipping it when
-- another claim holds it), never waits on another's insert.
INSERT INTO akadze.fair_cursor (id, key, tag) VALUES (1, '', 0) ON CONFLICT (id) DO NOTHING;--> statement-breakpoint
-- (Hand-written.) The keyed jobs already queued take their turns, each key's in claim order from the start.
UPDATE akadze.jobs j SET fair_tag = t.tag
FROM (
  SELECT q.id, (row_number() OVER (PARTITION BY q.fair_key ORDER BY q.priority DESC, q.run_at, q.id) - 1)::double precision
    / coalesce(w.weight, 1) AS tag
  FROM akadze.jobs q LEFT JOIN akadze.fair_weights w ON w.key = split_part(q.fair_key, chr(1), 1)
  WHERE q.state = 'queued' AND q.fair_key IS NOT NULL AND q.fair_tag IS NULL AND q.run_at <= now()
) t
WHERE j.id = t.id AND j.state = 'queued' AND j.fair_tag IS NULL;--> statement-breakpoint
-- (Hand-written, as in 0023.) Building an index sets the table's row count to what it holds: an empty queue table
-- gets the statistics 0022 gave a fresh install again.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM akadze.jobs) THEN
    INSERT INTO akadze.jobs (id, task) OVERRIDING SYSTEM VALUE SELECT -g, 'akadze.statistics' FROM generate_series(1, 100) g;
    ANALYZE akadze.jobs;
    DELETE FROM akadze.jobs WHERE id < 0;
  END IF;
END $$;
