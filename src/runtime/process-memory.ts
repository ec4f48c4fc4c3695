import type { App } from "../app/app.js";

/**
 * What one process remembers of an app between its engines (invocations, worker lanes): what the last claims
 * said of the database, when it last let a claim carry periodic work, and its jobs' pace. One object per app, held weakly (an
 * app dropped by its process is forgotten), and only ever a hint: a stale value costs one claim shaped the
 * old way, or one check made early or late, never a job.
 */
export interface ProcessMemory {
  /**
   * Whether any limit exists: a claim without the limit CTEs never takes a limited job (claimer.ts). Null until a
   * claim answered: a draining engine's first claim then goes without them (a claim that learns one exists asks
   * for the next at once), an engine of one claim carries them.
   */
  limits: boolean | null;
  /** Whether a queued job must be cancelled at a moment (a cancel request, an expiry): claims then carry the stop CTEs. Null likewise. */
  stops: boolean | null;
  /**
   * Whether keyed jobs are queued (fair claims), and when a claim last saw one (real clock). Null until a claim
   * answered: a draining engine's first claim then leaves keyed jobs for the next, fair one (sent at once if any
   * are queued), an engine of one claim walks the keys.
   */
  fair: boolean | null;
  fairSeenAt: number;
  /**
   * Whether a runtime schedule (`createSchedule`) is active: claims then probe for due ones (schedules/enqueue.ts).
   * Null likewise: an engine of one claim probes, a draining one learns from its first answer.
   */
  runtimeSchedules: boolean | null;
  /** Whether a fair claim met a tenant with sub-keys, and when it last did. */
  fairSubKeys: boolean;
  fairSubKeysSeenAt: number;
  /** Whether the last fair claim by turns saw a parked keyed job due; null: not asked yet (the next claim gives turns). */
  parkedDue: boolean | null;
  /**
   * Whether the last fair claim by turns saw a due job without a turn (without a key, or parked); null: not asked yet
   * (the next claim sends the plain scan).
   */
  plainDue: boolean | null;
  /** Whether the turns the last fair claim by turns read spanned priorities; null: not asked yet (the next reads on). */
  fairPriorities: boolean | null;
  /** When an invocation's first claim last carried retention (riders.ts). */
  prunedAt: number;
  /** When this process last started an ANALYZE of the jobs table, and last asked whether it needs a vacuum. */
  analyzedAt: number;
  vacuumedAt: number;
  /** When a claim last asked whether the history has work (history.ts). */
  historyCheckedAt: number;
  /** The moving averages of its jobs' run time and the round trip the last engines measured, so the next starts warm (pace.ts). */
  pace: { run: number; roundTrip: number } | null;
  /** The tasks a nudge already reported as never fitting its budget: said once per process, not per request (edge/nudge.ts). */
  overNudgeBudget: Set<string>;
}

const memories = new WeakMap<App, ProcessMemory>();

/** This process's memory of `app`, made on first use. */
export function memoryOf(app: App): ProcessMemory {
  let memory = memories.get(app);
  if (!memory) {
    memories.set(app, (memory = {
      limits: null, stops: null, fair: null, runtimeSchedules: null, fairSeenAt: -Infinity, fairSubKeys: false, fairSubKeysSeenAt: -Infinity, parkedDue: null, plainDue: null, fairPriorities: null,
      prunedAt: -Infinity, analyzedAt: -Infinity, vacuumedAt: -Infinity, historyCheckedAt: -Infinity, pace: null,
      overNudgeBudget: new Set(),
    }));
  }
  return memory;
}
