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
    traits = Object.freeze({ name: driverName(db), http, maxClaimBytes: http ? MAX_CLAIM_BYTES : null, maxSettleBytes: http ? MAX_SETTLE_BYTES : null });
    known.set(db, traits);
  }
  return traits;
}
