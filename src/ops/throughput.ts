import { sql } from "drizzle-orm";
import { parseDuration, type Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { queryJson, type Db } from "../db/driver.js";

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
  // (state, finished_at) is jobs_finished_idx: the count reads only the window's finished rows.
  const rows = await queryJson<[number, number, number][] | null>(db, sql`
    select jsonb_agg(jsonb_build_array(b.n, coalesce(x.succeeded, 0), coalesce(x.failed, 0)) order by b.n) as r
    from generate_series(0, ${count - 1}::int) b(n) left join (
      select least(floor(extract(epoch from finished_at - ${since.toISOString()}::timestamptz) * 1000 / ${bucketMs}::float8)::int, ${count - 1}::int) as n,
        count(*) filter (where state = 'succeeded') as succeeded, count(*) filter (where state = 'failed') as failed
      from akadze.jobs
      where state in ('succeeded', 'failed') and finished_at > ${since.toISOString()}::timestamptz and finished_at <= ${now.toISOString()}::timestamptz
      group by 1) x on x.n = b.n`);
  const buckets = (rows ?? []).map(([n, succeeded, failed]) => ({
    start: new Date(since.getTime() + n * bucketMs).toISOString(), succeeded: Number(succeeded), failed: Number(failed),
  }));
  return {
    bucketMs, buckets,
    succeeded: buckets.reduce((sum, b) => sum + b.succeeded, 0),
    failed: buckets.reduce((sum, b) => sum + b.failed, 0),
  };
}
