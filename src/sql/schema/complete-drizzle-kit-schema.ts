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
  const statements = migrations.flatMap((m) => m.statements.filter(isOutsideDrizzleTables));
  // A view is made once, by its latest definition: an earlier one run over a later one would drop the
  // columns the later one added, which Postgres refuses ("cannot drop columns from view").
  const latestView = new Map<string, number>();
  statements.forEach((statement, i) => { const view = viewName(statement); if (view !== null) latestView.set(view, i); });
  return [
    sql`select pg_advisory_xact_lock(hashtext(${MIGRATION_LOCK}))`,
    ...statements.filter((statement, i) => { const view = viewName(statement); return view === null || latestView.get(view) === i; })
      .map((statement) => sql.raw(statement)),
  ];
}

/** The name a `create or replace view` statement defines, or null for another statement. */
function viewName(statement: string): string | null {
  return /^\s*create\s+or\s+replace\s+view\s+([^\s(]+)/im.exec(statement)?.[1]?.replaceAll('"', "") ?? null;
}
