import { sql, type SQL } from "drizzle-orm";
import { workerStartedStatement } from "./register-worker.js";
import { timestamp } from "../time.js";

/** How often a busy worker tells the registry it is alive (its claims do it when it is not busy). */
export const WORKER_SEEN_INTERVAL = "15s";

/** A long-lived worker's report: seen at `now`, `jobsDone` more jobs done, and stopped if `stopped`. */
export function workerReportStatement(id: string, now: Date, jobsDone: number, stopped: boolean): SQL {
  return sql`update akadze.workers set
      last_seen_at = greatest(last_seen_at, ${timestamp(now)}), ${stopped ? sql`stopped_at = ${timestamp(now)}, ` : sql``}jobs_done = jobs_done + ${jobsDone}::int
    where id = ${id} returning to_jsonb(id) as r`;
}

/** A long-lived worker's registry statements: one at start, one per WORKER_SEEN_INTERVAL while alive, one at stop. */
export const workerStatements = {
  started: workerStartedStatement,
  seen: (id: string, now: Date, jobsDone: number): SQL => workerReportStatement(id, now, jobsDone, false),
  stopped: (id: string, now: Date, jobsDone: number): SQL => workerReportStatement(id, now, jobsDone, true),
};
