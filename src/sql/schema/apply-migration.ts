import { sql, type SQL } from "drizzle-orm";

/** Where applied migrations are recorded: outside the `akadze` schema and apart from drizzle's own table. */
export const MIGRATIONS_TABLE = "public.akadze_migrations";
/** The advisory lock every migrating transaction takes first, so concurrent migrators run one at a time. */
export const MIGRATION_LOCK = "akadze.migrate";

/**
 * One migration as the statements of one transaction: an advisory lock (concurrent migrators wait here),
 * the record table, the record of this migration (a loser of the race fails on its primary key and
 * rolls back), then the migration's own statements.
 */
export function applyMigrationStatements(migration: { id: number; name: string; statements: readonly string[] }): SQL[] {
  return [
    sql`select pg_advisory_xact_lock(hashtext(${MIGRATION_LOCK}))`,
    sql.raw(`create table if not exists ${MIGRATIONS_TABLE} (id integer primary key, name text not null, applied_at timestamptz not null default now())`),
    sql`insert into ${sql.raw(MIGRATIONS_TABLE)} (id, name) values (${migration.id}, ${migration.name})`,
    ...migration.statements.map((statement) => sql.raw(statement)),
  ];
}
