// The driver matrix: every behaviour suite runs against these four drizzle databases.
import { afterAll, beforeAll, beforeEach, describe } from "vitest";
import pg from "pg";
import { sql } from "drizzle-orm";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { PGlite } from "@electric-sql/pglite";
import { migrate } from "../../src/migrate.js";
import { queryJson, type Db } from "../../src/db/query.js";
import { startNeonEndpoint, type NeonEndpoint } from "../../src/dev/neon-endpoint.js";
import { configureNeonForEndpoint, neonHttpDb, neonServerlessDb } from "./neon.js";
import { createTestDatabase, EMPTY_AKADZE } from "./postgres.js";

export const DRIVERS = ["node-postgres", "neon-http", "neon-serverless", "pglite"] as const;
export type DriverName = (typeof DRIVERS)[number];

export interface Harness {
  name: DriverName;
  db: Db;
  /** Rows of any SELECT as plain JSON objects (same shape on every driver). */
  rows<T = any>(query: string): Promise<T[]>;
  /** Empties akadze's tables so each test starts clean. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** A real Postgres database (for node-postgres and the Neon drivers) or an in-memory PGlite. */
export async function openDriver(name: DriverName): Promise<Harness> {
  const closers: (() => Promise<unknown>)[] = [];
  let db: Db;
  if (name === "pglite") {
    const client = new PGlite();
    closers.push(() => client.close());
    db = drizzlePglite(client) as unknown as Db;
    await migrate(db);
  } else {
    const database = await createTestDatabase(name.replace("-", ""));
    closers.push(database.drop);
    if (name === "node-postgres") {
      const pool = new pg.Pool({ connectionString: database.url, max: 10 });
      closers.unshift(() => pool.end());
      db = drizzlePg(pool) as unknown as Db;
    } else {
      const endpoint: NeonEndpoint = await startNeonEndpoint({ connectionString: database.url });
      closers.unshift(() => endpoint.close());
      configureNeonForEndpoint(endpoint);
      if (name === "neon-http") {
        db = neonHttpDb(endpoint, database.name) as unknown as Db;
      } else {
        const serverless = neonServerlessDb(endpoint, database.name);
        closers.unshift(() => serverless.close());
        db = serverless.db as unknown as Db;
      }
    }
  }
  return {
    name,
    db,
    rows: async (query) => (await queryJson<any[]>(db, sql.raw(`select coalesce(jsonb_agg(t), '[]'::jsonb) as r from (${query}) t`))) ?? [],
    reset: async () => {
      await db.execute(sql.raw(EMPTY_AKADZE));
    },
    close: async () => { for (const close of closers) await close(); },
  };
}

/**
 * Declares `suite` once per driver; each gets its own database, emptied before every test.
 * @example forEachDriver((h) => { it("runs a job", async () => { ... h().db ... }); });
 */
export function forEachDriver(suite: (harness: () => Harness, name: DriverName) => void, drivers: readonly DriverName[] = DRIVERS): void {
  for (const name of drivers) {
    describe(name, () => {
      let harness: Harness;
      beforeAll(async () => { harness = await openDriver(name); });
      afterAll(async () => { await harness?.close(); });
      beforeEach(async () => { await harness.reset(); });
      suite(() => harness, name);
    });
  }
}
