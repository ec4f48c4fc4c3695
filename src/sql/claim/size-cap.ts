import { sql, type SQL } from "drizzle-orm";
import { archiveCtes } from "../history/archive.js";
import { noMovedJobs } from "../control/changed-job.js";

/**
 * `oversized`: candidates this claim leaves out for their size (`alone`: too large for any claim), and
 * `too_large`, which fails the latter with a sentence naming the cap. Without `maxBytes` both are empty.
 */
export function sizedCtes(p: { maxBytes?: number | null; now: SQL; order: SQL }): SQL {
  if (p.maxBytes == null) {
    return sql`oversized as (select null::bigint as id, false as alone where false),
    ${noMovedJobs("too_large")}`;
  }
  const cap = p.maxBytes;
  return sql`sized as (
      select c.id, b.bytes, sum(case when b.bytes <= ${cap} then b.bytes else 0 end) over (order by c.limited, ${p.order}) as total
      from candidates c join akadze.jobs j on j.id = c.id cross join lateral (select octet_length(j.args::text) as bytes) b
      where not c.stop
    ),
    oversized as (select id, bytes > ${cap} as alone from sized where bytes > ${cap} or total > ${cap}),
    too_large as (
      delete from akadze.jobs j using sized s where j.id = s.id and s.bytes > ${cap}
      returning j.id, j.task, j.queue, j.args, 'failed'::text as state, j.priority, j.attempt, j.max_attempts, j.run_at, j.expires_at,
        j.unique_key, j.limit_key, j.limit_wait_ms, j.cancel_requested,
        j.errors || jsonb_build_array(jsonb_build_object('attempt', j.attempt, 'at', ${p.now}, 'kind', 'ArgsTooLarge',
          'message', 'its args are ' || s.bytes || ' bytes of JSON, over the ' || ${cap}::int || ' bytes one claim over HTTP Postgres may carry (Neon caps a response at 10 MB): keep large data in your own tables and pass its key',
          'stack', null)) as errors,
        j.result, j.created_at, j.started_at, ${p.now} as finished_at, j.fair_key, j.trace_context
    ),
    ${sql.join(archiveCtes("too_large", sql`select * from too_large`, "failed"), sql`, `)}`;
}
