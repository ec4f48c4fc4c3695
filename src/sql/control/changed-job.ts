import { sql, type SQL } from "drizzle-orm";
import { CTE } from "../claim/cte-names.js";

/** What a control statement changed: the job, and its state after the change. */
export interface ChangedJob { id: number; task: string; queue: string; state: string; attempt: number }

/** The `ChangedJob` of a row the statement returned (`returning *`). */
export const CHANGED_JOB = sql`jsonb_build_object('id', id, 'task', task, 'queue', queue, 'state', state, 'attempt', attempt)`;

/** A job a statement moved from one state to another (a claim's recoveries and cancellations, a settle's outcomes): for summaries and transition hooks. */
export interface MovedJob {
  id: number; task: string; queue: string; attempt: number; from: string; to: string;
  /** The error recorded with the move, where the statement reports it (a recovery's `LeaseExpired`). */
  error?: { kind: string; message: string } | null;
}

/** Sources whose rows carry the error recorded with their move as `error` (JSON `{ kind, message }` or null). */
const WITH_ERROR: ReadonlySet<string> = new Set([CTE.recovered]);

/**
 * The `MovedJob`s of the rows `source` (a CTE name) holds, as one JSON array (empty, not null, when there are
 * none): the one place their JSON is built. `to` is a literal state or a column; `extra` adds fields.
 */
export function movedJobsJson(source: string, from: string, to: SQL, extra: SQL = sql``, where: SQL = sql``): SQL {
  const error = WITH_ERROR.has(source) ? sql`, 'error', error` : sql``;
  return sql`coalesce((select json_agg(json_build_object('id', id, 'task', task, 'queue', queue, 'attempt', attempt,
        'from', ${sql.raw(`'${from}'`)}, 'to', ${to}${error}${extra})) from ${sql.identifier(source)} ${where}), '[]'::json)`;
}

/** The CTE `name` of no moved jobs, with the columns `movedJobsJson` reads: where a statement moves none by design. */
export function noMovedJobs(name: string): SQL {
  return sql`${sql.raw(name)} as (select null::bigint as id, null::text as task, null::text as queue, null::int as attempt where false)`;
}
