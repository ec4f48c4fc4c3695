import { driverName, isNeonHttp, type Db } from "./query.js";

/**
 * What akadze must know of a drizzle database's driver, decided in this one place and once per database
 * object: every other module asks `traitsOf(db)` instead of looking at the driver itself.
 */
export interface DriverTraits {
  /** The driver's name, for summaries and messages ("node-postgres", "neon-http", ...). */
  name: string;
  /**
   * Each statement is one HTTP request (neon-http): no session, so no interactive transaction (atomic work
   * goes in one `db.batch`), no LISTEN, no prepared statements; and a request can be given up on, with a
   * statement timeout sent in the same request so the server rolls it back.
   */
  http: boolean;
  /** The most bytes of args one claim returns (Neon refuses responses over 10 MB); null: no cap. */
  maxClaimBytes: number | null;
  /** The most bytes of outcomes one settle statement sends (Neon refuses requests over 10 MB); null: no cap. */
  maxSettleBytes: number | null;
  /**
   * How a worker can hear a NOTIFY: `pool`, a pool whose connections keep a session (node-postgres,
   * neon-serverless), one of them held with LISTEN; `client`, a client with its own `listen` (PGlite); null,
   * no session to listen on (neon-http, or a client of unknown shape).
   */
  listen: "pool" | "client" | null;
  /** For `listen: "pool"`, the pool's size when it declares one (a pool of 1 has no connection to spare for LISTEN). */
  poolMax: number | null;
}

/** Over HTTP a claim returns at most this many bytes of args, well inside Neon's 10 MB response cap. */
export const MAX_CLAIM_BYTES = 6 * 1024 * 1024;
/** Over HTTP one settle carries at most about this many bytes of outcomes, well inside Neon's 10 MB request cap. */
export const MAX_SETTLE_BYTES = 4 * 1024 * 1024;

const known = new WeakMap<object, DriverTraits>();

/** The traits of `db`'s driver (a transaction's are its database's). */
export function traitsOf(db: Db): DriverTraits {
  let traits = known.get(db);
  if (!traits) {
    const http = isNeonHttp(db);
    const client = http ? null : clientOf(db);
    const listen = !client ? null
      : typeof client.listen === "function" && typeof client.connect !== "function" ? "client"
      : typeof client.connect === "function" && typeof client.query === "function" ? "pool"
      : null;
    const max = listen === "pool" ? client?.options?.max : undefined;
    traits = Object.freeze({
      name: driverName(db), http, maxClaimBytes: http ? MAX_CLAIM_BYTES : null, maxSettleBytes: http ? MAX_SETTLE_BYTES : null,
      listen, poolMax: typeof max === "number" ? max : null,
    });
    known.set(db, traits);
  }
  return traits;
}

/**
 * The driver's own client under a drizzle database (drizzle's `$client`: a pool, a PGlite instance), for
 * what drizzle does not wrap (LISTEN); null when there is none. Its shape is judged once, in `traitsOf`.
 */
export function clientOf(db: Db): any {
  const client = (db as { $client?: unknown }).$client;
  return client && typeof client === "object" ? client : null;
}
