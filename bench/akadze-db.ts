// akadze's database for one measurement, on one of the four drivers, in a database of its own.
import pg from "pg";
import { PGlite } from "@electric-sql/pglite";
import { drizzle as drizzlePg } from "drizzle-orm/node-postgres";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate, type Db } from "../src/index.js";
import { startNeonEndpoint } from "../src/dev/neon-endpoint.js";
import { neonHttpDb, neonServerlessDb } from "../test/support/neon.js";
import { createBenchDatabase, type BenchDatabase } from "./databases.js";
import { countHttpStatements, countStatements, type StatementCounter } from "./pg-cpu.js";

export const AKADZE_DRIVERS = ["node-postgres", "neon-http", "neon-serverless", "pglite"] as const;
export type AkadzeDriver = (typeof AKADZE_DRIVERS)[number];

/** Connections node-postgres may open: the same pool size the peers get. */
export const POOL_SIZE = 10;

export interface AkadzeTarget {
  driver: AkadzeDriver;
  db: Db;
  /** The Postgres database (null for PGlite). */
  database: string | null;
  /** HTTP requests the local Neon endpoint has answered (neon drivers), to check the statement counts. */
  requests(): number | null;
  /** Statements akadze sent (the migration's included until reset): node-postgres and neon-http; null on the others. */
  counter: StatementCounter | null;
  /** Disconnects, runs `beforeDrop` (connections closed, database still there), then drops the database. */
  close(beforeDrop?: () => Promise<void>): Promise<void>;
}

export interface OpenOptions {
  /** The migration to run (default this checkout's; a baseline brings its own). */
  migrate?: (db: Db) => Promise<unknown>;
  /** node-postgres connections (default POOL_SIZE). Idle connections stay open, so /proc sees every backend. */
  poolSize?: number;
}

/** A migrated akadze database reached through `driver`. */
export async function openAkadze(driver: AkadzeDriver, label: string, options: OpenOptions = {}): Promise<AkadzeTarget> {
  if (driver === "pglite") {
    const client = new PGlite();
    const db = drizzlePglite(client) as unknown as Db;
    await (options.migrate ?? migrate)(db);
    return { driver, db, database: null, requests: () => null, counter: null, close: async (beforeDrop) => { await client.close(); await beforeDrop?.(); } };
  }
  const database = await createBenchDatabase(`${label}_${driver}`);
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const pool = new pg.Pool({ connectionString: database.url, max: options.poolSize ?? POOL_SIZE, idleTimeoutMillis: 0 });
    // An idle connection's error (the database dropped with force while the pool is closing) must not crash the run;
    // errors of statements reach their callers anyway.
    pool.on("error", () => {});
    const counter = countStatements(pool);
    closers.unshift(() => pool.end());
    await (options.migrate ?? migrate)(drizzlePg(pool) as unknown as Db);
    const done = { database, closers, counter };
    if (driver === "node-postgres") return target(driver, drizzlePg(pool) as unknown as Db, () => null, done);
    // Backing connections stay open, so the backends' CPU read from /proc covers the whole window.
    const endpoint = await startNeonEndpoint({ connectionString: database.url, idleTimeoutMs: 0 });
    closers.unshift(() => endpoint.close());
    if (driver === "neon-http") {
      const http = { ...done, counter: countHttpStatements(endpoint.fetchEndpoint) };
      return target(driver, neonHttpDb(endpoint, database.name) as unknown as Db, () => endpoint.stats.requests, http);
    }
    const serverless = neonServerlessDb(endpoint, database.name);
    closers.unshift(() => serverless.close());
    return target(driver, serverless.db as unknown as Db, () => endpoint.stats.requests, done);
  } catch (error) {
    for (const close of closers) await close().catch(() => {});
    await database.drop();
    throw error;
  }
}

function target(driver: AkadzeDriver, db: Db, requests: () => number | null,
  done: { database: BenchDatabase; closers: (() => Promise<unknown>)[]; counter: StatementCounter }): AkadzeTarget {
  return {
    driver, db, database: done.database.name, requests, counter: driver === "node-postgres" || driver === "neon-http" ? done.counter : null,
    close: async (beforeDrop) => {
      try {
        for (const close of done.closers) await close();
        await beforeDrop?.();
      } finally {
        await done.database.drop();
      }
    },
  };
}
