import { hasNeonEndpoint, neonHttpDb, nodePostgres, POSTGRES_URL, redact } from "../connect.js";
import type { Db } from "../db/query.js";
import { CliError, UsageError } from "./errors.js";
import { lockPgliteDirectory, SHARE_DEV_DATABASE } from "../dev/pglite-lock.js";

/** How the CLI reaches the database: the global options every command shares. */
export interface ConnectionOptions {
  /** A postgres:// URL or a PGlite directory; default DATABASE_URL. */
  database?: string;
  /** Talk to the URL over Neon's SQL-over-HTTP (the neon-http driver) instead of TCP. */
  http?: boolean;
  /** The SQL-over-HTTP endpoint for --http; default NEON_FETCH_ENDPOINT, else Neon's own. */
  neonEndpoint?: string;
}

export interface Connection {
  db: Db;
  /** Where we are connected, without any password, for messages. */
  where: string;
  close(): Promise<void>;
}

const ANY_URL = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * Opens the database the options point at: node-postgres for a postgres:// URL, neon-http for one with
 * --http, PGlite for a directory path. Nothing is sent until the first statement.
 */
export async function connect(options: ConnectionOptions): Promise<Connection> {
  const database = options.database ?? process.env.DATABASE_URL;
  if (!database) throw new UsageError("no database: set DATABASE_URL or pass --database <postgres://... | directory>");
  const where = redact(database);
  if (POSTGRES_URL.test(database)) {
    if (options.http) return connectNeonHttp(database, options.neonEndpoint ?? process.env.NEON_FETCH_ENDPOINT, where);
    // A bounded connect timeout, so an unreachable host is a clear error rather than a hang.
    const pool = nodePostgres(database, 4);
    return { db: await pool.db, where, close: pool.close };
  }
  if (options.http) throw new UsageError("--http needs a postgres:// URL");
  if (/^[\w.-]+:\d+(\/|$)/.test(database)) {
    throw new UsageError(`${JSON.stringify(where)} looks like host:port, not a PGlite directory: write postgres://user@${database.replace(/^[^@]*@/, "")}`);
  }
  if (ANY_URL.test(database) && !database.startsWith("memory://")) {
    throw new UsageError(`unsupported database ${JSON.stringify(where)}: use a postgres:// URL or a PGlite directory`);
  }
  const [{ PGlite }, { drizzle }] = await Promise.all([import("@electric-sql/pglite"), import("drizzle-orm/pglite")]);
  const release = database.startsWith("memory://") ? () => {} : lockPgliteDirectory(database, SHARE_DEV_DATABASE);
  let client: InstanceType<typeof PGlite>;
  try {
    client = await PGlite.create(database);
  } catch (error) {
    release();
    throw new CliError(`cannot open the PGlite database in ${database}: ${(error as Error)?.message ?? error}`, { cause: error });
  }
  return { db: drizzle(client) as unknown as Db, where, close: async () => { try { await client.close(); } finally { release(); } } };
}

async function connectNeonHttp(url: string, endpoint: string | undefined, where: string): Promise<Connection> {
  const host = new URL(url).hostname;
  if (!endpoint && !hasNeonEndpoint(host)) {
    throw new UsageError(`--http to ${host} needs the SQL-over-HTTP endpoint: pass --neon-endpoint http://${host}:PORT/sql or set NEON_FETCH_ENDPOINT`);
  }
  return { db: neonHttpDb(url, endpoint), where: `${where} (over HTTP)`, close: async () => {} };
}
