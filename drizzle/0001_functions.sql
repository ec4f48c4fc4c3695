-- Raises an error from inside a single statement: completeBatch puts its ownership check first in
-- a neon-http batch, and a batch only rolls back when one of its statements fails.
CREATE OR REPLACE FUNCTION "akadze"."raise_error"(message text, code text DEFAULT 'P0001') RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '%', message USING ERRCODE = code;
END;
$$;
