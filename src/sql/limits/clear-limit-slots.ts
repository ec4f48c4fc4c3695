import { sql, type SQL } from "drizzle-orm";

/** Empties a key's `maxRunning` slots before `fillLimitSlotsStatement` (two statements: the numbers are reused). */
export function clearLimitSlotsStatement(key: string): SQL {
  return sql`delete from akadze.limit_slots where key = ${key}`;
}
