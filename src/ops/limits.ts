import { queryJson, type Db } from "../db/query.js";
import { listLimitsStatement } from "../sql/limits/list-limits.js";
import { timestamp } from "../sql/time.js";

/** A limit with its current use. */
export interface LimitRow {
  key: string;
  maxStarts: number | null;
  windowMs: number | null;
  maxRunning: number | null;
  /** Jobs holding one of its `maxRunning` slots now. */
  running: number;
  /** Starts inside the current sliding window. */
  startsInWindow: number;
}

/**
 * Every limit with how much of it is in use (at `now`, default the database's clock).
 * @example const [vendor] = (await listLimits(db)).filter((l) => l.key === "vendor");
 */
export async function listLimits(db: Db, options: { now?: Date } = {}): Promise<LimitRow[]> {
  const rows = await queryJson<LimitRow[] | null>(db, listLimitsStatement(timestamp(options.now)));
  return (rows ?? []).map((l) => ({
    key: l.key, maxStarts: l.maxStarts, windowMs: l.windowMs === null ? null : Number(l.windowMs), maxRunning: l.maxRunning,
    running: l.running, startsInWindow: l.startsInWindow,
  }));
}
