// Real Postgres for tests: one database per test file, cloned from a migrated template.
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "../../src/migrate.js";

export const PG_HOST = process.env.PGHOST_TEST ?? "127.0.0.1";
export const PG_PORT = Number(process.env.PGPORT_TEST ?? 5432);
/**
 * Empties every akadze table (its history's partitions through their parent) and restarts its ids, so a test
 * starts from a clean database. One statement, so it runs over every driver (neon-http takes one a request).
 * Deletes, not TRUNCATE: on tables this small a TRUNCATE of all of them took 45-75 ms a test here (new files
 * for every table and index), the deletes under 3 ms, and the suite empties them before each of its ~1,800 tests.
 */
export const EMPTY_AKADZE = `do $$ declare t text; begin
  for t in select format('%I.%I', n.nspname, c.relname) from pg_class c join pg_namespace n on n.oid = c.relnamespace
           where n.nspname = 'akadze' and c.relkind in ('r', 'p') and not c.relispartition loop
    execute 'delete from ' || t;
  end loop;
  for t in select format('%I.%I', schemaname, sequencename) from pg_sequences where schemaname = 'akadze' loop
    execute 'alter sequence ' || t || ' restart';
  end loop;
end $$`;

export const ADMIN_URL = `postgres://postgres@${PG_HOST}:${PG_PORT}/test`;
/**
 * One template per test run (global setup names it and test workers inherit the name through the
 * environment), so concurrent runs never drop each other's template.
 */
process.env.AKADZE_TEMPLATE_DB ??= `akadze_tpl_${process.pid}`;
export const TEMPLATE_DB = process.env.AKADZE_TEMPLATE_DB;

export function urlFor(database: string): string {
  return `postgres://postgres@${PG_HOST}:${PG_PORT}/${database}`;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try { return await fn(client); } finally { await client.end(); }
}

/** Drops the template at the end of the run. */
export async function dropTemplate(): Promise<void> {
  await admin((c) => c.query(`drop database if exists ${TEMPLATE_DB} with (force)`));
}

/** Creates the migrated template database (once per test run). */
export async function createTemplate(): Promise<void> {
  await admin(async (c) => {
    await c.query(`drop database if exists ${TEMPLATE_DB} with (force)`);
    await c.query(`create database ${TEMPLATE_DB}`);
  });
  const pool = new pg.Pool({ connectionString: urlFor(TEMPLATE_DB) });
  try { await migrate(drizzle(pool)); } finally { await pool.end(); }
}

/** A fresh migrated database; drop it with the returned function. */
export async function createTestDatabase(prefix = "t"): Promise<{ name: string; url: string; drop: () => Promise<void> }> {
  const name = `akadze_${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`.toLowerCase();
  // CREATE DATABASE ... TEMPLATE fails while another session is connected to the template; retry briefly.
  for (let attempt = 0; ; attempt++) {
    try {
      await admin((c) => c.query(`create database ${name} template ${TEMPLATE_DB}`));
      break;
    } catch (error) {
      if (attempt >= 20 || !String(error).includes("being accessed")) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100 + attempt * 50));
    }
  }
  return {
    name,
    url: urlFor(name),
    drop: () => admin((c) => c.query(`drop database if exists ${name} with (force)`)).then(() => undefined),
  };
}
