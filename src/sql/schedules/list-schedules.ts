import { sql, type SQL } from "drizzle-orm";

/** A stored schedule row (a runtime schedule's definition fields are null for one recorded from code). */
export interface StoredSchedule {
  name: string;
  task: string;
  lastSlot: string | null;
  seenAt: string;
  runtime: boolean;
  tenant: string | null;
  args: unknown;
  cron: string | null;
  timezone: string | null;
  everyMs: number | null;
  catchUp: number;
  skip: boolean;
  paused: boolean;
  revision: number;
  nextSlot: string | null;
  createdAt: string;
  updatedAt: string;
}

/** A schedules row (alias `s`) as a `StoredSchedule` object; the other schedule statements return it too. */
export const SCHEDULE_JSON = sql`jsonb_build_object('name', s.name, 'task', s.task, 'lastSlot', s.last_slot, 'seenAt', s.seen_at,
  'runtime', s.runtime, 'tenant', s.tenant, 'args', s.args, 'cron', s.cron, 'timezone', s.timezone, 'everyMs', s.every_ms,
  'catchUp', s.catch_up, 'skip', s.skip_overlap, 'paused', s.paused, 'revision', s.revision, 'nextSlot', s.next_slot,
  'createdAt', s.created_at, 'updatedAt', s.updated_at)`;

/** Every stored schedule by name, or only one tenant's (through `schedules_tenant_idx`), as one jsonb array. */
export function listSchedulesStatement(tenant?: string): SQL {
  return sql`
    select coalesce(jsonb_agg(${SCHEDULE_JSON} order by s.name), '[]'::jsonb) as r
    from akadze.schedules s
    ${tenant === undefined ? sql`` : sql`where s.tenant = ${tenant}`}`;
}
