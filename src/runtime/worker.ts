import { hostname } from "node:os";
import { parseDuration, type Duration } from "../core/duration.js";
import { parseWorkerOptions } from "../core/validate.js";
import type { App } from "../app/app.js";
import { queryJson, type Db } from "../db/driver.js";
import { WORKER_SEEN_INTERVAL, workerStatements } from "../ops/workers.js";
import type { Retention } from "../ops/retention.js";
import { DEFAULT_SLOTS, runOnce, type RunSummary } from "./run-once.js";

/** The first wait after a claim came back empty; it doubles up to `maxPoll` and resets when work appears. */
export const DEFAULT_MIN_POLL = "50ms";
export const DEFAULT_MAX_POLL = "2s";

/** Options of a long-lived worker. */
export interface WorkerOptions {
  db: Db;
  /** Queues to run; each gets its own `slots`. Default: every queue, sharing `slots`. */
  queues?: string[];
  /** Jobs running at once per queue. Default 8. */
  slots?: number;
  /** Aborting it stops gracefully: no new job starts, running ones finish, claimed-but-unstarted ones go back to `queued`. */
  signal?: AbortSignal;
  /** This worker's id in `akadze.workers`. Default: host, pid and a random suffix. */
  id?: string;
  lease?: Duration;
  /** Idle polling backs off from `minPoll` to `maxPoll`. Defaults "50ms" and "2s". */
  minPoll?: Duration;
  maxPoll?: Duration;
  /** Passed to every invocation; see `RunOnceOptions.retention`. */
  retention?: Retention;
  now?: () => Date;
  /** A claim or completion that failed (database unreachable...); the worker backs off and carries on. */
  onError?: (error: unknown) => void;
  /** Called once the worker has recorded itself and starts claiming. */
  onStart?: (id: string) => void;
  /** Called after every invocation that claimed something. */
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
  invocations: number;
}

/**
 * Runs jobs until `signal` aborts, then stops gracefully and resolves with a summary. Every queue gets
 * `slots` slots, run by one refilling invocation (`runOnce` with `refill`): when slots free up it claims
 * that many jobs in one statement, so a slot refills as soon as its job ends while claims stay batched
 * and one heartbeat renews every lease. When a queue is idle its lane polls, backing off from
 * `minPoll` to `maxPoll`.
 * @example
 * const stop = new AbortController();
 * process.on("SIGTERM", () => stop.abort());
 * await runWorker(app, { db, queues: ["mail", "default"], slots: 8, signal: stop.signal });
 */
export async function runWorker(app: App, options: WorkerOptions): Promise<WorkerSummary> {
  const o = parseWorkerOptions(options);
  const { db } = options;
  const now = options.now ?? app.clock;
  const id = options.id ?? `wrk-${hostname()}-${process.pid}-${crypto.randomUUID().slice(0, 8)}`;
  const poll = { min: parseDuration(o.minPoll ?? DEFAULT_MIN_POLL), max: parseDuration(o.maxPoll ?? DEFAULT_MAX_POLL) };
  const stopping = options.signal ?? new AbortController().signal;
  const summary: WorkerSummary = { id, jobsDone: 0, succeeded: 0, retried: 0, failed: 0, released: 0, invocations: 0 };
  let unreported = 0;
  let seq = 0;

  // The one statement a worker sends at start: it also proves the database is there and migrated.
  await queryJson(db, workerStatements.started(id, o.queues ?? null, now()));
  // Alive and jobs done, told to the registry every interval and whenever a claim finds nothing to do.
  let reporting: Promise<void> | null = null;
  const report = () => {
    if (reporting) return;
    const jobs = unreported;
    unreported = 0;
    reporting = queryJson(db, workerStatements.seen(id, now(), jobs)).then(() => {}, (error) => { unreported += jobs; options.onError?.(error); })
      .finally(() => { reporting = null; });
  };
  const seen = setInterval(report, parseDuration(WORKER_SEEN_INTERVAL));
  options.onStart?.(id);

  // One lane per queue (or one for every queue): a refilling invocation while there is work, then
  // polls that back off from minPoll to maxPoll until a claim finds work again.
  const lane = async (queues: string[] | null): Promise<void> => {
    let delay = 0;
    while (!stopping.aborted) {
      if (delay > 0) {
        await sleep(delay, stopping);
        if (stopping.aborted) break;
      }
      let claimed = 0;
      try {
        const slots = o.slots ?? DEFAULT_SLOTS;
        const s = await runOnce(app, {
          db, queues: queues ?? undefined, slots, batchSize: slots, refill: true, budget: Infinity, signal: options.signal,
          id: `${id}.${++seq}`, lease: options.lease, now, retention: options.retention, register: false,
        });
        claimed = s.claimed;
        const done = s.claimed - s.released - s.lost;
        summary.invocations++;
        summary.jobsDone += done;
        summary.succeeded += s.succeeded;
        summary.retried += s.retried;
        summary.failed += s.failed;
        summary.released += s.released;
        unreported += done;
        if (s.claimed > 0) options.onInvocation?.(s);
      } catch (error) {
        options.onError?.(error);
      }
      if (claimed > 0) delay = 0;
      else {
        // An empty claim is when the worker has time: report what it did.
        if (unreported > 0) report();
        delay = nextPollDelay(delay, delay > 0, poll);
      }
    }
  };

  try {
    await Promise.all((o.queues ?? [null]).map((queue) => lane(queue === null ? null : [queue])));
  } finally {
    clearInterval(seen);
    await reporting;
    await queryJson(db, workerStatements.stopped(id, now(), unreported)).catch((error) => options.onError?.(error));
  }
  return summary;
}

/**
 * The wait before an idle queue's next poll: doubles from `min` up to `max` with each empty poll; the
 * first empty claim after work (`polling` false) waits `min`.
 */
export function nextPollDelay(current: number, polling: boolean, poll: { min: number; max: number }): number {
  return Math.min(poll.max, Math.max(poll.min, polling ? current * 2 : current));
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => { clearTimeout(timer); signal.removeEventListener("abort", done); resolve(); };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
