// The names a docs example may use without declaring them (see docs/README.md, "Examples are tested").
// test/repo/docs-examples.test.ts imports the ones a block uses; `db` is a live binding set to a fresh database per example.
import pg from "pg";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import type { NeonHttpDatabase } from "drizzle-orm/neon-http";
import { boolean, integer, pgTable, serial, text } from "drizzle-orm/pg-core";
import type { Db } from "../../src/index.js";
import { startNeonEndpoint } from "../../src/dev/neon-endpoint.js";
import { neonHttpDb } from "./neon.js";
import { EMPTY_AKADZE } from "./postgres.js";

/** The application's database: node-postgres over a fresh clone of the migrated template. */
export let db: Db = unavailable("db") as Db;

/** A neon-http database, for examples that show `db.batch` (type-checked; not run yet). */
export const neonDb = unavailable("neonDb") as NeonHttpDatabase<Record<string, never>>;

/** An application table: an order a customer placed. */
export const orders = pgTable("orders", {
  id: serial("id").primaryKey(),
  customer: text("customer").notNull(),
  total: integer("total").notNull(),
});

/** An application table: a report a task builds. */
export const reports = pgTable("reports", {
  id: serial("id").primaryKey(),
  ready: boolean("ready").notNull().default(false),
});

/** The vendor error the examples retry on. */
export class VendorError extends Error {}

/** A stand-in for a third-party API. */
export const vendor = {
  /** The state of an export: ids starting with "pending" or "rejected" say so, the rest are "ready". */
  status: async (exportId: string): Promise<"pending" | "ready" | "rejected"> =>
    exportId.startsWith("pending") ? "pending" : exportId.startsWith("rejected") ? "rejected" : "ready",
  /** Sends one message; resolves to the vendor's message id. */
  send: async (_to: string, _text: string): Promise<string> => "msg-1",
};

/** Names the test may import into a block (every export above except the `Db` type). */
export const PRELUDE_NAMES = ["db", "neonDb", "orders", "reports", "vendor", "VendorError"] as const;

const APP_TABLES = [
  "create table if not exists orders (id serial primary key, customer text not null, total integer not null)",
  "create table if not exists reports (id serial primary key, ready boolean not null default false)",
];

/** Points `db` at the database behind `url` and creates the application tables; returns a closer. */
export async function openPrelude(url: string): Promise<() => Promise<void>> {
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  db = drizzle(pool) as unknown as Db;
  for (const statement of APP_TABLES) await db.execute(sql.raw(statement));
  return async () => {
    db = unavailable("db") as Db;
    await pool.end();
  };
}

/** Empties akadze's and the application's tables so every example starts from nothing. */
export async function resetPrelude(): Promise<void> {
  await db.execute(sql.raw(EMPTY_AKADZE));
  await db.execute(sql.raw("truncate orders, reports restart identity"));
}

function unavailable(name: string): unknown {
  return new Proxy({}, {
    get(_target, property) {
      if (property === "then") return undefined;
      throw new Error(`${name} is not available in this docs example (it is type-checked only; see docs/README.md)`);
    },
  });
}

/**
 * Points `db` at the same database over neon-http (the real Neon driver through a local endpoint) until the
 * returned function restores it, so an example can be run on both drivers.
 */
export async function switchToNeonHttp(url: string): Promise<() => Promise<void>> {
  const endpoint = await startNeonEndpoint({ connectionString: url });
  const previous = db;
  db = neonHttpDb(endpoint, decodeURIComponent(new URL(url).pathname.slice(1))) as unknown as Db;
  return async () => {
    db = previous;
    await endpoint.close();
  };
}
