// The check that akadze's schema is complete, made once per database client before the first job is
// claimed: a schema akadze cannot work with (drizzle-kit made the tables but not akadze.raise_error(), so
// every completeBatch fails after its job's side effect) is refused with a sentence naming the fix.
import { AkadzeError } from "../core/errors.js";
import { findMissingSchemaObjectsStatement, REQUIRED_SCHEMA_OBJECTS } from "../sql/schema/find-missing-schema-objects.js";
import { MIGRATE_HINT, queryJson, type Db } from "./query.js";

/** What drizzle-kit leaves out, and how to add it. */
export const COMPLETE_HINT = "drizzle-kit creates akadze's tables from akadze/schema but not its functions and views: " +
  "run `npx akadze migrate` (or `await migrate(db)`) after each drizzle-kit migrate or push; it adds them and leaves the tables to drizzle-kit";

// Checked clients: the drizzle database's client (a pool, a neon function, a PGlite) or the database
// itself, so every drizzle wrapper of one pool shares the answer. Only a complete schema is remembered.
const checked = new WeakMap<object, Promise<void>>();
const keyOf = (db: Db): object => ((db as { $client?: unknown }).$client as object | undefined) ?? db;

/** The sentence for a list of missing objects. */
export function missingSchemaSentence(missing: readonly string[]): string {
  const tables = REQUIRED_SCHEMA_OBJECTS.filter((o) => o.kind === "table").map((o) => o.name);
  if (tables.every((t) => missing.includes(t))) return MIGRATE_HINT;
  // Views and functions are what drizzle-kit cannot make from akadze/schema; a missing table, column or check is something else.
  const onlyFunctions = missing.every((name) => !["table", "column", "check"].includes(REQUIRED_SCHEMA_OBJECTS.find((o) => o.name === name)?.kind ?? ""));
  const fix = onlyFunctions ? COMPLETE_HINT
    : "run `npx akadze migrate`, or, when drizzle-kit manages akadze's tables, generate and apply a migration from `export * from \"akadze/schema\"` of this akadze version (then `npx akadze migrate` for its functions)";
  return `akadze's schema in this database lacks ${missing.join(", ")}: ${fix}`;
}

/**
 * Resolves when akadze's schema is complete; otherwise rejects with an AkadzeError that names what is
 * missing and the fix. One statement the first time per client, none after.
 * @example await ensureSchema(db); // before claiming
 */
export function ensureSchema(db: Db): Promise<void> {
  const key = keyOf(db);
  let done = checked.get(key);
  if (!done) {
    done = queryJson<string[]>(db, findMissingSchemaObjectsStatement()).then((missing) => {
      if (missing.length > 0) throw new AkadzeError(missingSchemaSentence(missing));
    });
    checked.set(key, done);
    done.catch(() => checked.delete(key)); // fixed later (a migrate from elsewhere): checked again next time
  }
  return done;
}

/** Records that `db`'s schema is complete (migrate just made it so): its next start sends no check. */
export function markSchemaComplete(db: Db): void {
  checked.set(keyOf(db), Promise.resolve());
}
