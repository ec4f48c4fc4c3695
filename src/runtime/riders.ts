// What rides on a claim. The core claim (sql/claim/claim.ts) picks due jobs and leases them; everything else an
// engine does in the same round trip is a rider, listed here in the order its CTEs are written:
//
// | rider      | rides on                               | before the core / after it             | reports        | with the answer                     |
// |------------|----------------------------------------|----------------------------------------|----------------|-------------------------------------|
// | recovery   | first claim, then at most every second | expired leases back to queued (before) | recovered      | (the claim's transitions)           |
// |            | (a wake-up's claim: every two); a      | (a draining engine: a probe first,     | (recoverable)  | the probe found work: more          |
// |            | draining engine: the probe, then it    | the CTEs on the claim after)           |                |                                     |
// | schedules  | every claim                            | due slots, runtime probe if any active | schedules, ... | learns the clock, next slots; more  |
// | retention  | when due (per process, per worker)     | finished rows pruned (before)          |                |                                     |
// | history    | when due (per process)                 |                                        | historyDue     | one maintenance statement beside    |
// | registry   | runOnce, until a claim took a job      | the invocation's row (after)           |                | stops once listed                   |
// | backlog    | fan-out                                | due jobs counted (after)               | backlog        | (fan-out reads it)                  |
// | upkeep     | every claim; the vacuum check when due |                                        | stale, vacuum  | ANALYZE or VACUUM beside the claims |
//
// A rider's CTEs run in the claim's snapshot and must not touch the queued or running jobs the core moves.
// docs/sql/riders/ holds each rider's SQL as rendered (scripts/render-sql.ts); test/runtime/claim-riders.test.ts
// runs each one alone on the core.
import type { App } from "../app/app.js";
import type { RetentionPlan } from "../core/retention.js";
import { query, type Db } from "../db/query.js";
import { analyzeJobsStatement, statisticsStale, vacuumDue, vacuumJobsStatement } from "../sql/claim/analyze.js";
import { backlogRide } from "../sql/claim/backlog.js";
import { recoveryProbe, recoveryRide } from "../sql/claim/recover.js";
import { prunedOwnersCte } from "../sql/claim/owner-lease.js";
import { invocationSeenCte } from "../sql/registry/register-worker.js";
import { retentionCtes } from "../sql/history/retention.js";
import { ScheduleSlots } from "../schedules/enqueue.js";
import type { ClaimRider, Ride, RideContext } from "./rider.js";
import { memoryOf } from "./process-memory.js";

export type { ClaimRider, Ride, RideContext } from "./rider.js";

/** What the riders of one engine are made from; the optional ones ride only when given. */
export interface RiderSetup {
  app: App;
  db: Db;
  /** The local clock (schedules' first guess of the database's, retention's horizons). */
  now: () => Date;
  /** Row-by-row retention, and whether a claim carries it. */
  retention?: { plan: RetentionPlan; due: (first: boolean) => boolean };
  /** The history's retention, checked in claims and maintained beside them. */
  history?: ClaimRider;
  /** runOnce's registry row, written by the first claim that takes a job. */
  registry?: { id: string; queues: string[] | null; startedAt: Date };
  /** Fan-out: how far a claim counts the due jobs, given whether it is the first and its size; undefined: not this one. */
  backlog?: (first: boolean, batchSize: number) => number | undefined;
  /**
   * A worker lane: whether the claim about to be sent answers an enqueue's wake-up (a job's start waits on it),
   * asked once per claim. Recovery then waits for a later claim (recoveryRider).
   */
  woken?: () => boolean;
}

/** The riders of one engine, in the order of the table above. */
export function claimRiders(s: RiderSetup): ClaimRider[] {
  return [
    recoveryRider(s.now, s.woken),
    schedulesRider(s.app, s.now),
    ...(s.retention ? [retentionRider(s.retention, s.now)] : []),
    ...(s.history ? [s.history] : []),
    ...(s.registry ? [registryRider(s.registry, s.now)] : []),
    ...(s.backlog ? [backlogRider(s.backlog)] : []),
    new Upkeep(s.app, s.db),
  ];
}

/**
 * How often, after an engine's first claim, its later claims carry recovery. A lapsed lease (30 s by default, so
 * an engine that died is found 30 s after its last heartbeat) waits at most this much longer (twice as long on
 * a worker lane woken by enqueues, below); the claims between skip recovery's CTEs, which cost a claim of a few
 * jobs twice its own Postgres time unprepared (over neon-http, every claim: 7-9 ms against 3-4, planning 1.2-2 ms
 * against 0.7-1) and, prepared, 0.6-1 ms of its execution.
 */
export const RECOVERY_EVERY_MS = 1_000;

/**
 * Jobs whose lease expired (another engine's) go back to queued, or fail on their last attempt: on an engine's
 * first claim (every invocation recovers), then on a claim at least RECOVERY_EVERY_MS after the last that did
 * by the engine's clock (`now`). A claim that answers a worker's wake-up (`woken`) leaves a due recovery to the
 * next claim, unless it is twice RECOVERY_EVERY_MS late: the enqueued job starts without it. Recovery's variant
 * of the claim runs seldom on a connection, so Postgres plans it afresh each time (2-3.5 ms at bind, read off
 * the server log): that was most of an idle worker's first job after 2.5 s of waiting (9 ms against 6).
 *
 * An engine that claims again at once (`drains`) sends recovery's probe (`recoveryProbe`: an expired or missing
 * owner row under running jobs, a passed expiry of a job's own) in its place, and the recovery itself on the
 * claim after one whose probe found work, which it asks for at once. Nearly always nothing has lapsed, and the
 * probe costs a claim a fraction of the recovery's planning (on a new connection: 8-9 ms of a first claim's
 * 44, measured cold; 3-4 ms warm). An engine of one claim (`drain: false`) carries the recovery itself.
 */
export function recoveryRider(now: () => Date, woken: () => boolean = () => false): ClaimRider {
  let carriedAt = -Infinity;
  // The last probe found a lapsed lease: the next claim carries the recovery, whenever it goes.
  let found = false;
  return {
    name: "recovery",
    ride: ({ first, drains, core }) => {
      if (!found) {
        const at = now().getTime();
        const waitedOn = woken();
        // (A clock moved back, as a test's may be, counts as time passed.)
        const since = at >= carriedAt ? at - carriedAt : Infinity;
        if (!first && (since < RECOVERY_EVERY_MS || (waitedOn && since < 2 * RECOVERY_EVERY_MS))) return null;
        carriedAt = at;
      }
      if (found || !drains) {
        found = false;
        return recoveryRide(core.now, core.owner);
      }
      return { ...recoveryProbe(core.now, core.owner), answered: (answer) => (found = answer.recoverable === true) };
    },
  };
}

/** Code and runtime schedules: due slots enqueued once each (schedules/enqueue.ts). */
export function schedulesRider(app: App, now: () => Date): ClaimRider {
  const slots = new ScheduleSlots(app, memoryOf(app));
  return {
    name: "schedules",
    ride: ({ drains, core }) => {
      const offer = slots.forClaim(now(), core.now, drains);
      return { before: offer.extra, report: offer.report, answered: (answer) => offer.answered(answer.schedules, answer.runtimeDue, answer.runtimeAny) };
    },
  };
}

/** How often one process lets an invocation's first claim carry retention. */
export const RETENTION_EVERY_MS = 10_000;

/**
 * An invocation's retention: its first claim carries it, at most once per RETENTION_EVERY_MS per app in this
 * process (so a burst of invocations does not repeat it), or always on a caller's clock (tests move it by days).
 */
export function invocationRetention(app: App, plan: RetentionPlan, callerClock: boolean): RiderSetup["retention"] {
  let carries: boolean | undefined;
  return {
    plan,
    due: (first) => {
      if (!first) return false;
      if (carries === undefined) {
        const memory = memoryOf(app);
        carries = callerClock || Date.now() - memory.prunedAt >= RETENTION_EVERY_MS;
        if (carries && !callerClock) memory.prunedAt = Date.now();
      }
      return carries;
    },
  };
}

/**
 * Failed jobs, registry rows, event ids and closed debounce windows past their horizon, and the lease rows of
 * owners that ended (recovery deletes them only when it rides), in bounded batches.
 */
export function retentionRider(r: { plan: RetentionPlan; due: (first: boolean) => boolean }, now: () => Date): ClaimRider {
  return {
    name: "retention",
    ride: ({ first, core }) => r.due(first)
      ? { before: [...retentionCtes(r.plan, now()), prunedOwnersCte("akadze_pruned_owners", { before: core.now, owner: core.owner, batch: r.plan.batch })] }
      : null,
  };
}

/** An invocation's registry row, once a claim took a job: an idle tick leaves none. */
export function registryRider(r: { id: string; queues: string[] | null; startedAt: Date }, now: () => Date): ClaimRider {
  let listed = false;
  return {
    name: "registry",
    ride: () => listed ? null : {
      after: [invocationSeenCte(r.id, r.queues, r.startedAt, now())],
      answered: (answer) => { if (answer.claimed.length > 0) listed = true; },
    },
  };
}

/** The due jobs counted up to a bound, for fan-out to size the invocations on. */
export function backlogRider(bound: (first: boolean, batchSize: number) => number | undefined): ClaimRider {
  return {
    name: "backlog",
    ride: ({ first, batchSize, core }) => {
      const n = bound(first, batchSize);
      return n === undefined ? null : backlogRide(core, n);
    },
  };
}

/** How often one process may start an ANALYZE of the jobs table: a role that may not analyze (Postgres skips it with a warning) then adds no statement to every full claim. */
const ANALYZE_EVERY_MS = 60_000;
/** How often one process may ask whether the queue table needs a vacuum, and start one. */
const VACUUM_EVERY_MS = 5_000;

/**
 * The queue table's upkeep beside the claims: a full claim asks whether the planner's statistics are stale and
 * starts an ANALYZE (at most every ANALYZE_EVERY_MS per process); every VACUUM_EVERY_MS a claim asks whether
 * the table holds a vacuum's worth of dead rows and starts a VACUUM. Their failure only leaves things as they were.
 */
export class Upkeep implements ClaimRider {
  readonly name = "upkeep";
  /** The statement this rider started, if any: the invocation waits for it before it returns. */
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly app: App, private readonly db: Db) {}

  ride({ batchSize }: RideContext): Ride {
    const memory = memoryOf(this.app);
    const askVacuum = Date.now() - memory.vacuumedAt >= VACUUM_EVERY_MS;
    if (askVacuum) memory.vacuumedAt = Date.now();
    return {
      report: { stale: statisticsStale(batchSize), vacuum: vacuumDue(askVacuum) },
      answered: (answer, count) => {
        if (answer.vacuum) this.start(vacuumJobsStatement(), count);
        else if (answer.stale && Date.now() - memory.analyzedAt >= ANALYZE_EVERY_MS) {
          memory.analyzedAt = Date.now();
          this.start(analyzeJobsStatement(), count);
        }
      },
    };
  }

  private start(statement: Parameters<typeof query>[1], count: () => void): void {
    count();
    const before = this.running;
    this.running = Promise.all([before, query(this.db, statement).then(() => {}, () => {})]).then(() => {});
  }

  finished(): Promise<void> {
    return this.running;
  }
}
