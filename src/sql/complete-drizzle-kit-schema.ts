import { sql, type SQL } from "drizzle-orm";
import { MIGRATION_LOCK } from "./apply-migration.js";

/**
 * A statement of a migration that drizzle-kit cannot derive from akadze/schema (a function, a view, a
 * procedure). Such statements are written to be re-run (`create or replace`), so they are all that
 * completing a schema drizzle-kit made needs, and can run again after every drizzle-kit migrate.
 */
export function isOutsideDrizzleTables(statement: string): boolean {
  return /^\s*create\s+or\s+replace\s+(function|procedure|view)\b/im.test(statement);
}

/**
 * One transaction that completes a schema drizzle-kit made from `export * from "akadze/schema"`: the
 * migration lock, then every migration statement outside drizzle's tables, in migration order. Nothing is
 * recorded in the migrations table: drizzle-kit owns the tables, and records would make a later
 * `akadze migrate` replay DDL drizzle-kit already ran ("relation jobs_id_seq already exists").
 */
export function completeDrizzleKitSchemaStatements(migrations: readonly { statements: readonly string[] }[]): SQL[] {
  return [
    sql`select pg_advisory_xact_lock(hashtext(${MIGRATION_LOCK}))`,
    ...migrations.flatMap((m) => m.statements.filter(isOutsideDrizzleTables)).map((statement) => sql.raw(statement)),
  ];
}
