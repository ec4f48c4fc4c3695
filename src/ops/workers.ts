import * as v from "valibot";
import { DurationSchema, parseDuration, type Duration } from "../core/duration.js";
import { CountSchema, MAX_SPAN_MS, parseOrThrow } from "../core/validate.js";
import { queryJson, type Db } from "../db/query.js";
import { listWorkersStatement } from "../sql/registry/list-workers.js";
import type { WorkerKind } from "../sql/registry/register-worker.js";
import { msBefore, timestamp } from "../sql/time.js";
import { iso } from "../core/time-text.js";
import { MAX_LIST_LIMIT } from "./jobs.js";

/** `workers list` shows what is live plus what stopped within this window, by default. */
export const DEFAULT_WORKERS_SINCE = "1h";

/** One row of `workers list`. */
export interface WorkerRow {
  id: string;
  kind: WorkerKind;
  queues: string[];
  status: "live" | "stopped" | "lost";
  startedAt: string;
  lastSeenAt: string;
  stoppedAt: string | null;
  jobsDone: number;
  /** Jobs it holds a lease on right now. */
  running: number;
  /** The invocation whose fan-out started it (a sibling or a successor), or null. */
  startedBy: string | null;
}

const ListSchema = v.strictObject({
  since: v.optional(v.pipe(DurationSchema, v.maxValue(MAX_SPAN_MS, `since must be at most ${MAX_SPAN_MS} ms`))),
  all: v.optional(v.boolean()),
  limit: v.optional(CountSchema("limit", MAX_LIST_LIMIT)),
  now: v.optional(v.date("now must be a valid Date")),
});

/**
 * The live invocations and workers plus the ones gone within `since` (default 1h), newest first. A
 * worker is live while it keeps being seen; an invocation while it holds leases, `lost` if they expired.
 * @example const rows = await listWorkers(db, { since: "15m" });
 */
export async function listWorkers(db: Db, options: { since?: Duration; all?: boolean; limit?: number; now?: Date } = {}): Promise<WorkerRow[]> {
  const o = parseOrThrow(ListSchema, options, "workers list options");
  const since = o.all ? null : msBefore(o.now, o.since ?? parseDuration(DEFAULT_WORKERS_SINCE));
  const rows = await queryJson<WorkerRow[] | null>(db, listWorkersStatement(timestamp(o.now), since, o.limit ?? 100));
  return (rows ?? []).map((w) => ({
    id: w.id, kind: w.kind, status: w.status, queues: w.queues, running: Number(w.running), jobsDone: w.jobsDone,
    startedAt: iso(w.startedAt)!, lastSeenAt: iso(w.lastSeenAt)!, stoppedAt: iso(w.stoppedAt), startedBy: w.startedBy ?? null,
  }));
}
