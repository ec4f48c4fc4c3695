import { sql, type SQL } from "drizzle-orm";
import { timestamp } from "../time.js";

/**
 * Jobs that finished `succeeded` or `failed` in (since, now], counted in `buckets` slices of `bucketMs`, as
 * a jsonb array of `[slice, succeeded, failed]`, oldest first (every slice, empty ones too), or null.
 */
export function readThroughputStatement(since: Date, now: Date, buckets: number, bucketMs: number): SQL {
  // The history's partitions and block ranges by finish time, and the dead letters' finished_at index: the
  // count reads only the window's finished rows.
  return sql`
    select jsonb_agg(jsonb_build_array(b.n, coalesce(x.succeeded, 0), coalesce(x.failed, 0)) order by b.n) as r
    from generate_series(0, ${buckets - 1}::int) b(n) left join (
      select least(floor(extract(epoch from finished_at - ${timestamp(since)}) * 1000 / ${bucketMs}::float8)::int, ${buckets - 1}::int) as n,
        count(*) filter (where state = 'succeeded') as succeeded, count(*) filter (where state = 'failed') as failed
      from (select state, finished_at from akadze.job_history where state = 'succeeded'
            union all select state, finished_at from akadze.failed_jobs) f
      where finished_at > ${timestamp(since)} and finished_at <= ${timestamp(now)}
      group by 1) x on x.n = b.n`;
}
