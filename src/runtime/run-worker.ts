import { hostname } from "node:os";
import { parseDuration, type Duration } from "../core/duration.js";
import { parseOrThrow, WorkerOptionsSchema } from "../core/validate.js";
import type { App } from "../app/app.js";
import { driverName, queryJson, type Db } from "../db/query.js";
import { WORKER_SEEN_INTERVAL, workerStatements } from "../sql/registry/report-worker.js";
import { resolveRetention, type Retention } from "../core/retention.js";
import { claimRiders } from "./riders.js";
import { timestamp } from "../sql/time.js";
import { Engine } from "./engine.js";
import { BudgetClock } from "./budget-clock.js";
import { countsAnything, jobsEnded, Summary } from "./summary.js";
import { workerLanePolicy } from "./claim-policy.js";
import { ensureSchema } from "../db/schema-check.js";
import { HistoryKeeper } from "./history.js";
import { checkedClock, DEFAULT_LEASE, DEFAULT_SLOTS, resolveRunOptions, type RunSummary } from "./run-once.js";
import { nextTurn, sleep } from "./signal.js";
import { listenForJobs, type JobWakeups } from "./wakeup.js";
import { throttledErrorReport } from "./error-report.js";
import { errorMessage } from "../core/error-causes.js";

/** The first wait after a claim came back empty; it doubles up to `maxPoll` and resets when work appears. */
export const DEFAULT_MIN_POLL = "50ms";
export const DEFAULT_MAX_POLL = "2s";
/**
 * The most jobs a worker lane holds, by default: this many times its slots. Claims are sized to the work (free
 * slots plus what would start within two round trips), so slow jobs are held about a slot's worth at a time
 * and only quick ones fill this. (With quick jobs a lane claims about half of it at a time, one claim on its
 * way: at 100 per slot, claims of 500 cost Postgres some 10 % more CPU per job and Node some 15 % more than
 * claims of 1,000, in interleaved runs of 10,000 jobs. The crash bound, the lookahead's cap, is unchanged.)
 */
export const DEFAULT_PREFETCH_PER_SLOT = 200;
/** How often a long-lived worker prunes finished jobs (in one of its claims). */
export const WORKER_RETENTION_INTERVAL = "1m";

/** Options of a long-lived worker. */
export interface WorkerOptions {
  db: Db;
  /** Queues to run; each gets its own `slots`. Default: every queue, sharing `slots`. */
  queues?: string[];
  /** Jobs running at once per queue. Default 8. */
  slots?: number;
  /**
   * The most jobs claimed ahead per queue and held in a local queue, so a freed slot starts its next job without
   * a round trip. Claims are sized to the work up to this. Default `slots * DEFAULT_PREFETCH_PER_SLOT`. Prefetched jobs hold a lease but spend no attempt
   * until they start; on stop they go back to `queued`.
   */
  prefetch?: number;
  /** Aborting it stops gracefully: no new job starts, running ones finish, claimed-but-unstarted ones go back to `queued`. */
  signal?: AbortSignal;
  /** This worker's id in `akadze.workers`. Default: host, pid and a random suffix. */
  id?: string;
  lease?: Duration;
  /** Idle polling backs off from `minPoll` to `maxPoll`; an enqueue wakes the worker at once where the driver can listen. Defaults "50ms" and "2s". */
  minPoll?: Duration;
  maxPoll?: Duration;
  /** Wake on enqueue with LISTEN/NOTIFY (node-postgres, neon-serverless, PGlite). Default true; polling goes on either way. */
  listen?: boolean;
  /**
   * What the worker prunes: failed jobs and registry rows once a minute, the history's partitions as often as
   * their width asks (a second to a minute); see `RunOnceOptions.retention`.
   */
  retention?: Retention;
  now?: () => Date;
  /**
   * A claim or completion that failed (database unreachable...); the worker backs off and carries on. Default:
   * a line on stderr (`console.error`), the same one at most every 30 s while it repeats.
   */
  onError?: (error: unknown) => void;
  /** Called once the worker has recorded itself and starts claiming. */
  onStart?: (id: string) => void;
  /** Called each time a lane ran out of work, with what it did since the last call. */
  onInvocation?: (summary: RunSummary) => void;
}

/** What a worker did over its life. */
export interface WorkerSummary {
  id: string;
  /** Runs that reached an outcome (succeeded, retried, snoozed, failed, cancelled): a retried job counts each run. */
  jobsDone: number;
  succeeded: number;
  retried: number;
  failed: number;
  /** Claimed but never started because the worker was stopping; back in `queued`, attempt unspent. */
  released: number;
  /** A lane's cycles: each ran from its start, or its last idle wait, until its claims ran dry (or it stopped). */
  cycles: number;
  /** @deprecated Use `cycles` (the same value): a lane's cycle is not an invocation. Removed in the next release. */
  invocations: number;
}

/**
 * Runs jobs until `signal` aborts, then stops gracefully and resolves with a summary. Every queue (or every
 * queue together) is a lane: one engine with `slots` runners, a local queue of up to `prefetch` claimed jobs
 * under one lease owner and heartbeat, claims and completions in batches. A lane whose claims run dry waits
 * for an enqueue (LISTEN/NOTIFY where the driver keeps a session) or its next poll, backing off from
 * `minPoll` to `maxPoll`.
 * @example
 * const stop = new AbortController();
 * process.on("SIGTERM", () => stop.abort());
 * await runWorker(app, { db, queues: ["mail", "default"], slots: 8, signal: stop.signal });
 */
export async function runWorker(app: App, options: WorkerOptions): Promise<WorkerSummary> {
  parseOrThrow(WorkerOptionsSchema, options, "worker options");
  const o = options;
  const { db } = options;
  const slots = o.slots ?? DEFAULT_SLOTS;
  const prefetch = o.prefetch ?? slots * DEFAULT_PREFETCH_PER_SLOT;
  const run = resolveRunOptions({ db, slots, batchSize: prefetch, lease: options.lease ?? DEFAULT_LEASE, budget: Infinity });
  const now = checkedClock(options.now ?? app.clock, "runWorker");
  const sqlClock = options.now ?? app.sqlClock;
  const id = options.id ?? `wrk-${hostname()}-${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
  const poll = { min: parseDuration(o.minPoll ?? DEFAULT_MIN_POLL), max: parseDuration(o.maxPoll ?? DEFAULT_MAX_POLL) };
  const stopping = options.signal ?? new AbortController().signal;
  const retention = resolveRetention(options.retention);
  const onError = options.onError ?? throttledErrorReport((error) => `akadze worker ${id}: ${errorMessage(error)}`, (line) => console.error(line));
  // The worker's totals: each lane's cycles added as they end.
  const totals = new Summary(id);
  let unreported = 0;
  let lastPrune = 0;

  // A schema akadze cannot work with is refused before any job runs (one statement, once per client).
  await ensureSchema(db);
  const driver = driverName(db);
  await queryJson(db, workerStatements.started(id, o.queues ?? null, now()));
  // LISTEN holds a connection of its own, which may have to be opened: it is asked for once the lanes' first claims
  // are on their way (they take the pool's idle connections), so a backlog's first jobs do not wait for it. (An
  // enqueue between a lane's claim and the LISTEN goes unheard: a lane's first wait for a wake-up ends at once.)
  const listening: Promise<JobWakeups | null> = options.listen === false ? Promise.resolve(null)
    : nextTurn().then(() => listenForJobs(db, onError));
  // Alive and jobs done, told to the registry every interval and whenever a lane runs out of work.
  let reporting: Promise<void> | null = null;
  const report = () => {
    if (reporting) return;
    const jobs = unreported;
    unreported = 0;
    reporting = queryJson(db, workerStatements.seen(id, now(), jobs)).then(() => {}, (error) => { unreported += jobs; onError(error); })
      .finally(() => { reporting = null; });
  };
  const seen = setInterval(report, parseDuration(WORKER_SEEN_INTERVAL));
  options.onStart?.(id);

  // Retention rides on any lane's claim once per WORKER_RETENTION_INTERVAL.
  const pruneDue = () => {
    if (Date.now() - lastPrune < parseDuration(WORKER_RETENTION_INTERVAL)) return false;
    lastPrune = Date.now();
    return true;
  };

  const sqlNow = () => timestamp(sqlClock?.() ?? null);

  const lane = async (queue: string | null): Promise<void> => {
    let delay = 0;
    // The lane's next claim answers an enqueue's wake-up (recovery waits for a later one, riders.ts).
    let woken = false;
    // Traced: a lane has no span of its own (it lives as long as the worker); its claims, settles and runs
    // hang off the context the worker started in.
    const trace = app.tracing ? app.tracing.engine({ id, kind: "worker", queues: queue === null ? null : [queue] }) : null;
    while (!stopping.aborted) {
      let engine: Engine | undefined;
      const take = () => {
        // What the lane did since the last report, as a summary of its own.
        const cycle = engine!.summary.take();
        totals.add(cycle);
        unreported += jobsEnded(cycle);
        if (countsAnything(cycle)) options.onInvocation?.({ ...cycle, driver });
        return cycle.claimed;
      };
      engine = new Engine({
        app, db, id, queues: queue === null ? null : [queue], slots,
        leaseMs: run.leaseMs, heartbeatMs: run.heartbeatMs, now, sqlNow,
        budget: new BudgetClock(now, options.now === undefined && app.sqlClock === null, Infinity), signal: stopping,
        riders: claimRiders({
          app, db, now, retention: retention ? { plan: retention, due: pruneDue } : undefined,
          history: retention ? new HistoryKeeper({ app, db, plan: retention, sqlNow, callerClock: false }) : undefined,
          woken: () => { const w = woken; woken = false; return w; },
        }),
        keepSucceeded: retention ? retention.keepSucceeded : true,
        settleAfter: () => [], onError, trace,
        policy: workerLanePolicy({
          prefetch,
          idle: async () => {
            const claimed = take();
            if (claimed > 0) delay = 0;
            else if (unreported > 0) report(); // an empty claim is when the worker has time: report what it did
            delay = nextPollDelay(delay, claimed === 0 && delay > 0, poll);
            const wakeups = await listening;
            if (wakeups) woken = await wakeups.wait(queue, delay, stopping);
            else await sleep(delay, stopping);
            return !stopping.aborted;
          },
        }),
      });
      try {
        await engine.run();
        take();
      } catch (error) {
        // The first claim failed (database unreachable...): back off and start the lane again.
        onError(error);
        delay = nextPollDelay(delay, true, poll);
        await sleep(delay, stopping);
      }
    }
  };

  try {
    await Promise.all((o.queues ?? [null]).map((queue) => lane(queue)));
  } finally {
    clearInterval(seen);
    await (await listening)?.close().catch(onError);
    await reporting;
    await queryJson(db, workerStatements.stopped(id, now(), unreported)).catch(onError);
  }
  const t = totals.take();
  return { id, jobsDone: jobsEnded(t), succeeded: t.succeeded, retried: t.retried, failed: t.failed, released: t.released, cycles: totals.cycles, invocations: totals.cycles };
}

/**
 * The wait before an idle queue's next poll: doubles from `min` up to `max` with each empty poll; the
 * first empty claim after work (`polling` false) waits `min`.
 */
export function nextPollDelay(current: number, polling: boolean, poll: { min: number; max: number }): number {
  return Math.min(poll.max, Math.max(poll.min, polling ? current * 2 : current));
}
