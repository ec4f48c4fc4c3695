// Fresh Postgres databases for the benchmark: one per system per measurement, dropped afterwards.
import pg from "pg";

export const PG_HOST = process.env.PGHOST_BENCH ?? "127.0.0.1";
export const PG_PORT = Number(process.env.PGPORT_BENCH ?? 5432);
export const ADMIN_URL = `postgres://postgres@${PG_HOST}:${PG_PORT}/test`;

export interface BenchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

async function admin(statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try { await client.query(statement); } finally { await client.end(); }
}

/** An empty database named `akadze_bench_<label>_<pid>` (names must carry the branch name). */
export async function createBenchDatabase(label: string): Promise<BenchDatabase> {
  const name = `akadze_bench_${label.replace(/[^a-z0-9]/gi, "").toLowerCase()}_${process.pid}`;
  await admin(`drop database if exists ${name} with (force)`);
  await admin(`create database ${name}`);
  return {
    name,
    url: `postgres://postgres@${PG_HOST}:${PG_PORT}/${name}`,
    drop: () => admin(`drop database if exists ${name} with (force)`),
  };
}

/** `fn` inside a transaction on `client` that is rolled back, whatever happens: the rows look the same to the next run. */
export async function rolledBack<T>(client: pg.Client, fn: () => Promise<T>): Promise<T> {
  await client.query("begin");
  try {
    return await fn();
  } finally {
    await client.query("rollback");
  }
}

/** Runs `fn` with a fresh database and drops it afterwards, whatever happens. */
export async function withDatabase<T>(label: string, fn: (db: BenchDatabase) => Promise<T>): Promise<T> {
  const db = await createBenchDatabase(label);
  try { return await fn(db); } finally { await db.drop(); }
}

/**
 * Something started in a fresh database and kept running, for a caller that stops it later: `start` registers
 * what stops each part it started (`onClose`), and `close` runs those in reverse, then drops the database. A
 * start that fails is closed at once.
 */
export async function startedInDatabase<T>(label: string,
  start: (db: BenchDatabase, onClose: (stop: () => Promise<unknown>) => void) => Promise<T>): Promise<{ started: T; close(): Promise<void> }> {
  const db = await createBenchDatabase(label);
  const stops: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
    await db.drop();
  };
  try {
    return { started: await start(db, (stop) => { stops.push(stop); }), close };
  } catch (error) {
    await close().catch(() => {});
    throw error;
  }
}

/** The server's version string, for the results. */
export async function postgresVersion(): Promise<string> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try { return (await client.query("select version() as v")).rows[0].v; } finally { await client.end(); }
}

/**
 * Transactions committed or rolled back in `name` so far, from pg_stat_database. Backends report
 * their counts when they exit (or about once a second while busy), so read it after disconnecting.
 */
export async function transactionsIn(name: string): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 300)); // let exiting backends report
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    const { rows } = await client.query("select (xact_commit + xact_rollback)::float8 as n from pg_stat_database where datname = $1", [name]);
    return rows[0]?.n ?? NaN;
  } finally {
    await client.end();
  }
}
