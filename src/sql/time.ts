import { sql, type SQL } from "drizzle-orm";
import { DEFAULT_BACKOFF_MAX_MS } from "../core/backoff.js";

/**
 * A moment for a statement: the caller's clock when one is given (tests pass a ManualClock), otherwise the
 * database's `now()`, so leases, limit windows and schedule slots agree across hosts whose clocks differ.
 * @example sql`update akadze.jobs set finished_at = ${timestamp(null)}` // now() on the database
 */
export function timestamp(at: Date | null | undefined): SQL {
  return at ? sql`${at.toISOString()}::timestamptz` : sql`now()`;
}

/** A number of milliseconds as an interval. @example sql`${timestamp(null)} + ${msInterval(sql`${30_000}`)}` */
export function msInterval(ms: SQL): SQL {
  return sql`(${ms})::float8 * interval '1 millisecond'`;
}

/** `ms` milliseconds before `at`, or before the database's `now()` when `at` is null (no clock was given). */
export function msBefore(at: Date | null | undefined, ms: number): SQL {
  return at ? timestamp(new Date(at.getTime() - ms)) : sql`now() - ${msInterval(sql`${ms}`)}`;
}

/**
 * The default backoff curve in SQL (the same as `defaultBackoffMs`), for jobs recovered from a dead
 * invocation: 2^(attempt-1) s, at most DEFAULT_BACKOFF_MAX_MS, jitter uniform in [50 %, 100 %].
 */
export function defaultBackoffSql(attempt: SQL): SQL {
  return sql`make_interval(secs => least(${DEFAULT_BACKOFF_MAX_MS / 1000}, power(2, greatest(${attempt}, 1) - 1)) * (0.5 + random() * 0.5))`;
}

/** A job that must not run (any more): its cancel was requested or it expired. `j` is the jobs row. */
export function mustCancel(now: SQL): SQL {
  return sql`(j.cancel_requested or coalesce(j.expires_at <= ${now}, false))`;
}
