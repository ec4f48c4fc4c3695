import { sql, type SQL } from "drizzle-orm";

/**
 * Holds off claims and completions while a limit's slots and tokens are rebuilt, so the rebuild reads
 * a still picture of what is running. Plain reads (`limits list`) are not blocked. Run it first in the
 * same transaction (or neon-http batch) as `setLimitStatement`, `clearLimitSlotsStatement` and
 * `fillLimitSlotsStatement`.
 */
export function lockLimitTablesStatement(): SQL {
  return sql`lock table akadze.limit_slots, akadze.limit_tokens in exclusive mode`;
}
