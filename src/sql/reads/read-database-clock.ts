import { sql, type SQL } from "drizzle-orm";

/** The database server's clock at this moment (not the transaction's start), answered as `{ now }`. */
export function readDatabaseClockStatement(): SQL {
  return sql`select jsonb_build_object('now', clock_timestamp()) as r`;
}
