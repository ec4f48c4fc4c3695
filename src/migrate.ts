import { AkadzeError } from "./core/errors.js";
import { causeChain } from "./core/error-causes.js";
import { query, queryJson, runAtomically, type Db } from "./db/query.js";
import { markSchemaComplete, missingSchemaSentence } from "./db/schema-check.js";
import { completeDrizzleKitSchemaStatements } from "./sql/schema/complete-drizzle-kit-schema.js";
import { findMissingSchemaObjectsStatement } from "./sql/schema/find-missing-schema-objects.js";
import { appliedMigrationsStatements } from "./sql/schema/applied-migrations.js";
import { applyMigrationStatements } from "./sql/schema/apply-migration.js";
import { MIGRATIONS } from "./sql/schema/migrations.generated.js";

/**
 * Applies akadze's migrations (embedded, so it works on edge runtimes without a file system). On a
 * schema drizzle-kit made from `export * from "akadze/schema"` it adds only what drizzle-kit cannot
 * (akadze's functions) and records nothing, leaving the tables to drizzle-kit: run it after each drizzle-kit migrate.
 * Safe when several processes run it at once: each migration runs in one transaction under an
 * advisory lock and records itself; a process that loses the race sees the record and carries on.
 * @example await migrate(db);
 */
export async function migrate(db: Db): Promise<MigrateResult> {
  const done = await appliedMigrations(db);
  if (done === null) {
    // No record of akadze migrate, yet akadze's tables exist: drizzle-kit made them from akadze/schema.
    const missing = await queryJson<string[]>(db, findMissingSchemaObjectsStatement());
    if (!missing.includes("akadze.jobs")) return completeDrizzleKitSchema(db, missing);
  }
  const applied: string[] = [];
  for (const migration of MIGRATIONS) {
    if (done?.has(migration.id)) continue;
    try {
      await runAtomically(db, (d) => applyMigrationStatements(migration).map((statement) => d.execute(statement)));
      applied.push(migration.name);
    } catch (error) {
      if (!isAlreadyApplied(error)) throw error;
    }
  }
  markSchemaComplete(db);
  return { applied, completed: [] };
}

/** What `migrate` did: the migrations it applied, or, on a schema drizzle-kit made, the objects it added. */
export interface MigrateResult {
  /** The migrations applied, by name (`0000_init`); empty when the database was up to date. */
  applied: string[];
  /** On a schema drizzle-kit made (akadze's tables, no record of akadze migrate): the objects added to it. */
  completed: string[];
}

/**
 * Adds to akadze's drizzle-kit-made tables what drizzle-kit cannot make (its functions), and checks that
 * the tables are all there: a schema from an older akadze/schema is refused, naming what it lacks.
 */
async function completeDrizzleKitSchema(db: Db, missingBefore: string[]): Promise<MigrateResult> {
  await runAtomically(db, (d) => completeDrizzleKitSchemaStatements(MIGRATIONS).map((statement) => d.execute(statement)));
  const missing = await queryJson<string[]>(db, findMissingSchemaObjectsStatement());
  if (missing.length > 0) throw new AkadzeError(missingSchemaSentence(missing));
  markSchemaComplete(db);
  return { applied: [], completed: missingBefore };
}

/** The ids of the applied migrations, or null when akadze migrate never ran here (no record table). */
async function appliedMigrations(db: Db): Promise<Set<number> | null> {
  const [{ present }] = await query<{ present: boolean }>(db, appliedMigrationsStatements.present());
  if (!present) return null;
  const rows = await query<{ id: number }>(db, appliedMigrationsStatements.ids());
  return new Set(rows.map((row) => Number(row.id)));
}

function isAlreadyApplied(error: unknown): boolean {
  return causeChain(error).some((e) => e.code === "23505" && String(e.constraint ?? e.message).includes("akadze_migrations"));
}
