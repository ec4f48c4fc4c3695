import { causeChain } from "./core/errors.js";
import { query, runAtomically, type Db } from "./db/query.js";
import { appliedMigrationsStatements } from "./sql/applied-migrations.js";
import { applyMigrationStatements } from "./sql/apply-migration.js";
import { MIGRATIONS } from "./sql/migrations.generated.js";

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
      await runAtomically(db, (d) => applyMigrationStatements(migration).map((statement) => d.execute(statement)));
      applied.push(migration.name);
    } catch (error) {
      if (!isAlreadyApplied(error)) throw error;
    }
  }
  return { applied };
}

async function appliedMigrations(db: Db): Promise<Set<number>> {
  const [{ present }] = await query<{ present: boolean }>(db, appliedMigrationsStatements.present());
  if (!present) return new Set();
  const rows = await query<{ id: number }>(db, appliedMigrationsStatements.ids());
  return new Set(rows.map((row) => Number(row.id)));
}

function isAlreadyApplied(error: unknown): boolean {
  return causeChain(error).some((e) => e.code === "23505" && String(e.constraint ?? e.message).includes("akadze_migrations"));
}
