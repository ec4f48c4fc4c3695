// The database a test app runs on: an in-memory PGlite with akadze's schema, or the caller's own.
import type { Db } from "../db/query.js";
import { queryJson } from "../db/query.js";
import { ensureSchema } from "../db/schema-check.js";
import { migrate } from "../migrate.js";
import { readDatabaseClockStatement } from "../sql/reads/read-database-clock.js";

/** A test's database and how to let go of it. */
export interface TestDatabase {
  db: Db;
  close(): Promise<void>;
}

/**
 * The caller's database, checked to hold akadze's schema (it is not closed with the test app), or a fresh
 * in-memory PGlite migrated with it (closed with the test app). PGlite is loaded only when needed.
 */
export async function openTestDatabase(given: Db | undefined): Promise<TestDatabase> {
  if (given !== undefined) {
    await ensureSchema(given);
    return { db: given, close: async () => {} };
  }
  const [{ PGlite }, { drizzle }] = await Promise.all([import("@electric-sql/pglite"), import("drizzle-orm/pglite")]);
  const dump = await migratedDump;
  // Loading a migrated data directory skips Postgres' initdb and the migrations: most of a PGlite's start.
  const client = dump ? new PGlite({ loadDataDir: dump }) : new PGlite();
  const db = drizzle(client) as unknown as Db;
  try {
    if (!dump) {
      await migrate(db);
      // Dumped once, before the test app uses it; a failed dump only means the next one migrates too.
      migratedDump ??= client.dumpDataDir("none").catch(() => { migratedDump = undefined; return undefined; });
      await migratedDump;
    }
  } catch (error) {
    await client.close();
    throw error;
  }
  return { db, close: () => client.close() };
}

/** A fresh PGlite with akadze's schema, as a data directory, made by this process's first in-memory test app. */
let migratedDump: Promise<Blob | undefined> | undefined;

/**
 * An upper bound of how far the database's clock runs ahead of this host's (0 when it does not): the
 * server read its clock after `before`. A job enqueued at the database's `now()` is then due on a test
 * clock that starts this far ahead.
 */
export async function databaseAheadMs(db: Db): Promise<number> {
  const before = Date.now();
  const { now } = await queryJson<{ now: string }>(db, readDatabaseClockStatement());
  return Math.max(0, new Date(now).getTime() - before);
}
