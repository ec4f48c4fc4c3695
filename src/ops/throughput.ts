import { parseDuration, type Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { queryJson, type Db } from "../db/query.js";
import { readThroughputStatement } from "../sql/reads/read-throughput.js";

/** The dashboard's chart shows this window... */
export const THROUGHPUT_WINDOW = "1h";
/** ...in this many bars. */
export const THROUGHPUT_BUCKETS = 12;

/** Jobs that finished succeeded or failed in one slice of the window. */
export interface ThroughputBucket {
  /** Start of the slice (ISO); it runs for `bucketMs`. */
  start: string;
  succeeded: number;
  failed: number;
}

/** What finished in the last `window`, oldest slice first. */
export interface Throughput {
  bucketMs: number;
  buckets: ThroughputBucket[];
  succeeded: number;
  failed: number;
}

/**
 * Jobs that finished `succeeded` or `failed` in the last hour (or `window`), counted per slice, in one
 * statement. Only jobs still in the table count: retention that prunes sooner than the window shows less.
 * @example const { succeeded, failed } = await readThroughput(db);
 */
export async function readThroughput(db: Db, options: { now?: Date; window?: Duration; buckets?: number } = {}): Promise<Throughput> {
  const now = options.now ?? new Date();
  const count = options.buckets ?? THROUGHPUT_BUCKETS;
  if (!Number.isInteger(count) || count < 1 || count > 1000) throw new InvalidInput("buckets must be a whole number from 1 to 1000");
  const windowMs = parseDuration(options.window ?? THROUGHPUT_WINDOW, "window");
  if (windowMs <= 0) throw new InvalidInput("window must be longer than zero");
  const bucketMs = windowMs / count;
  const since = new Date(now.getTime() - windowMs);
  const rows = await queryJson<[number, number, number][] | null>(db, readThroughputStatement(since, now, count, bucketMs));
  const buckets = (rows ?? []).map(([n, succeeded, failed]) => ({
    start: new Date(since.getTime() + n * bucketMs).toISOString(), succeeded: Number(succeeded), failed: Number(failed),
  }));
  return {
    bucketMs, buckets,
    succeeded: buckets.reduce((sum, b) => sum + b.succeeded, 0),
    failed: buckets.reduce((sum, b) => sum + b.failed, 0),
  };
}
