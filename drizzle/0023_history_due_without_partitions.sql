-- (Hand-written.) A partitioned history without any partition of its own yet (a fresh install) has work for its
-- maintenance at once. Before, it had none until the default partition held more than 1,000 rows; by then
-- every job finished since the install was in the default partition, and making the first partitions meant a
-- scan of all of it (Postgres checks that no row of the default belongs in a new partition) under a lock that
-- holds up every settle and claim writing the history: a minute of a busy queue's jobs. Now the first claim's
-- check finds the history due and the first partitions are made while the default partition is empty.
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
  IF v_first IS NULL OR v_first <= extract(epoch from v_cutoff) OR v_last < extract(epoch from p_now) + p_width_s THEN
    RETURN true;
  END IF;
  EXECUTE 'SELECT EXISTS (SELECT 1 FROM akadze.job_history_default WHERE finished_at < $1)
      OR (SELECT count(*) FROM (SELECT 1 FROM akadze.job_history_default LIMIT 1001) x) > 1000'
    INTO v_due USING greatest(v_cutoff, p_now - least(p_width_s, 60) * interval '1 second');
  RETURN v_due;
END $$;
