import { sql } from "drizzle-orm";
import { causeChain } from "./core/errors.js";
import { query, runAtomically, type Db } from "./db/driver.js";
import { MIGRATIONS } from "./sql/migrations.generated.js";

/** Where applied migrations are recorded: outside the `akadze` schema and apart from drizzle's own table. */
export const MIGRATIONS_TABLE = "public.akadze_migrations";
const MIGRATION_LOCK = "akadze.migrate";

/**
 * Applies akadze's migrations (embedded, so it works on edge runtimes without a file system).
 * Safe when several processes run it at once: each migration runs in one transaction under an
 * advisory lock and records itself; a process that loses the race sees the record and carries on.
 * @example await migrate(db);
 */
export async function migrate(db: Db): Promise<{ applied: string[] }> {
  const done = await appliedMigrations(db);
  const applied: string[] = [];
  for (const migration of MIGRATIONS) {
    if (done.has(migration.id)) continue;
    try {
      await runAtomically(db, (d) => [
        d.execute(sql`select pg_advisory_xact_lock(hashtext(${MIGRATION_LOCK}))`),
        d.execute(sql.raw(`create table if not exists ${MIGRATIONS_TABLE} (id integer primary key, name text not null, applied_at timestamptz not null default now())`)),
        d.execute(sql`insert into ${sql.raw(MIGRATIONS_TABLE)} (id, name) values (${migration.id}, ${migration.name})`),
        ...migration.statements.map((statement) => d.execute(sql.raw(statement))),
      ]);
      applied.push(migration.name);
    } catch (error) {
      if (!isAlreadyApplied(error)) throw error;
    }
  }
  return { applied };
}

async function appliedMigrations(db: Db): Promise<Set<number>> {
  const [{ present }] = await query<{ present: boolean }>(db, sql`select to_regclass(${MIGRATIONS_TABLE}) is not null as present`);
  if (!present) return new Set();
  const rows = await query<{ id: number }>(db, sql`select id from ${sql.raw(MIGRATIONS_TABLE)}`);
  return new Set(rows.map((row) => Number(row.id)));
}

function isAlreadyApplied(error: unknown): boolean {
  return causeChain(error).some((e) => e.code === "23505" && String(e.constraint ?? e.message).includes("akadze_migrations"));
}
