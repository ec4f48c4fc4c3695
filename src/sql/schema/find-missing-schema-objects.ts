import { sql, type SQL } from "drizzle-orm";

/**
 * A database object akadze needs: a table, a view (which drizzle-kit does not make), an index (standing for the
 * column it is on), a column without an index (`schema.table.column`), a function named with its argument types,
 * or a check constraint that must allow a value (`schema.constraint('value')`: an older check refuses it).
 */
export interface SchemaObject { kind: "table" | "view" | "index" | "column" | "function" | "check"; name: string }

/**
 * Everything akadze's statements need, checked before an invocation or a worker claims its first job. A new
 * table or function goes here as one line: a schema without it is then refused at start, naming the fix.
 * `akadze.raise_error(text, text)` is the one object drizzle-kit cannot make from akadze/schema.
 */
export const REQUIRED_SCHEMA_OBJECTS: readonly SchemaObject[] = [
  { kind: "table", name: "akadze.jobs" },
  { kind: "table", name: "akadze.queues" },
  { kind: "table", name: "akadze.limits" },
  { kind: "table", name: "akadze.limit_slots" },
  { kind: "table", name: "akadze.limit_tokens" },
  { kind: "table", name: "akadze.schedules" },
  { kind: "table", name: "akadze.workers" },
  { kind: "table", name: "akadze.owners" },
  { kind: "table", name: "akadze.job_history" },
  { kind: "table", name: "akadze.failed_jobs" },
  { kind: "view", name: "akadze.all_jobs" },
  { kind: "table", name: "akadze.invocation_slots" },
  { kind: "table", name: "akadze.steps" },
  { kind: "table", name: "akadze.dashboard_sign_outs" },
  { kind: "table", name: "akadze.child_waits" },
  { kind: "table", name: "akadze.fair_cursor" },
  { kind: "table", name: "akadze.fair_sub_cursors" },
  { kind: "table", name: "akadze.fair_weights" },
  { kind: "table", name: "akadze.replays" },
  { kind: "table", name: "akadze.job_progress" },
  { kind: "table", name: "akadze.job_logs" },
  { kind: "table", name: "akadze.sent_events" },
  { kind: "table", name: "akadze.debounce_windows" },
  { kind: "index", name: "akadze.jobs_debounce_key_queued" },
  { kind: "index", name: "akadze.jobs_fair_idx" },
  { kind: "index", name: "akadze.jobs_tag_idx" },
  { kind: "index", name: "akadze.jobs_key_tag_idx" },
  { kind: "column", name: "akadze.fair_cursor.tag" },
  { kind: "column", name: "akadze.jobs.trace_context" },
  { kind: "check", name: "akadze.steps_kind_check('version')" },
  { kind: "index", name: "akadze.schedules_due_idx" },
  { kind: "column", name: "akadze.schedules.last_job_id" },
  { kind: "function", name: "akadze.prune_orphan_steps(integer)" },
  { kind: "function", name: "akadze.prune_orphan_replays(integer)" },
  { kind: "function", name: "akadze.prune_orphan_progress(timestamp with time zone, integer)" },
  { kind: "function", name: "akadze.maintain_history(timestamp with time zone, double precision, bigint, bigint, integer)" },
  { kind: "function", name: "akadze.raise_error(text, text)" },
];

/**
 * The names of the objects that do not exist, as one jsonb array (`[]` when the schema is complete): one
 * statement, answered from the catalog by name (to_regclass, to_regprocedure), so it works over neon-http
 * and on a database where even the akadze schema is missing.
 */
export function findMissingSchemaObjectsStatement(objects: readonly SchemaObject[] = REQUIRED_SCHEMA_OBJECTS): SQL {
  const rows = sql.join(objects.map((o, i) => sql`(${o.kind}, ${o.name}, ${i}::int)`), sql`, `);
  return sql`
    select coalesce(jsonb_agg(o.name order by o.position), '[]'::jsonb) as r
    from (values ${rows}) as o(kind, name, position)
    where case when o.kind = 'function' then to_regprocedure(o.name) is null
      when o.kind = 'column' then not exists (select 1 from pg_attribute a
        where a.attrelid = to_regclass(regexp_replace(o.name, '[.][^.]+$', '')) and a.attname = substring(o.name from '[^.]+$') and not a.attisdropped)
      when o.kind = 'check' then not exists (select 1 from pg_constraint c join pg_namespace n on n.oid = c.connamespace
        where n.nspname = split_part(o.name, '.', 1) and c.conname = substring(o.name from '[.]([^(]+)[(]')
          and position(substring(o.name from '[(](.*)[)]$') in pg_get_constraintdef(c.oid)) > 0)
      else to_regclass(o.name) is null end`;
}
