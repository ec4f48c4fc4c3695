import { sql, type SQL } from "drizzle-orm";
import { MIGRATIONS_TABLE } from "./apply-migration.js";

/**
 * The ids of the applied migrations, read in two statements: whether the record table exists (rows
 * `{ present }`), then, only if it does, its ids (rows `{ id }`). One statement cannot do both: a
 * statement naming a missing table fails as it is parsed.
 */
export const appliedMigrationsStatements = {
  present: (): SQL => sql`select to_regclass(${MIGRATIONS_TABLE}) is not null as present`,
  ids: (): SQL => sql`select id from ${sql.raw(MIGRATIONS_TABLE)}`,
};
