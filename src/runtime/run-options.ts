// What an invocation is configured with and what it reports: the contract of runOnce, apart from its machinery.
import type { Duration } from "../core/duration.js";
import type { Db } from "../db/query.js";
import type { JobState } from "../core/states.js";
import type { Retention } from "../core/retention.js";
import type { FanOutOptions, FanOutReport } from "./fan-out-options.js";

/** Jobs an invocation runs at once unless told. @example runOnce(app, { db, slots: DEFAULT_SLOTS * 2 }) */
export const DEFAULT_SLOTS = 8;
/** Jobs an invocation claims unless told. @example runOnce(app, { db, batchSize: DEFAULT_BATCH_SIZE }) */
export const DEFAULT_BATCH_SIZE = 50;
/** An invocation's wall time unless told: inside Vercel's and Cloudflare's limits. @example runOnce(app, { db, budget: DEFAULT_BUDGET }) */
export const DEFAULT_BUDGET = "25s";
/** How long a claim holds a job before any invocation may recover it; heartbeats renew it. @example runOnce(app, { db, lease: DEFAULT_LEASE }) */
export const DEFAULT_LEASE = "30s";
/** Options of one invocation. @example const options: RunOnceOptions = { db, queues: ["mail"], budget: "25s" }; */
export interface RunOnceOptions {
  db: Db;
  /** Queues to claim from; default: every queue. */
  queues?: string[];
  /** Jobs run at once. Default 8. */
  slots?: number;
  /** Jobs claimed. Default 50. */
  batchSize?: number;
  /** Wall time for the whole invocation; no job starts whose timeout would outlive it. Default "25s"; `Infinity` for none. */
  budget?: Duration;
  /** Lease per claim, renewed by the heartbeat. Default "30s". */
  lease?: Duration;
  /** Heartbeat interval. Default a third of the lease. */
  heartbeat?: Duration;
  /** The clock for every timestamp and the budget. Default: the app's clock. */
  now?: () => Date;
  /** Aborting it stops on purpose: no new job starts, unstarted ones go back to `queued`. */
  signal?: AbortSignal;
  /** This invocation's id (lease owner). Default: a random one. */
  id?: string;
  /**
   * Finished jobs this invocation prunes in its claim's round trip (a bounded batch): an age for succeeded
   * and cancelled jobs, `{ finished, failed, batch }`, or `false`. Default `DEFAULT_RETENTION` ("7d"); failed jobs are kept.
   */
  retention?: Retention;
  /** Record this invocation in `akadze.workers` (in its claim and completion statements). Default true; `runWorker` records itself instead. */
  register?: boolean;
  /**
   * Drain: claim the next batch before the slots run dry, until the budget is spent, `signal` aborts or a
   * claim finds less than it asked for. Default true. `false` runs exactly one batch.
   */
  drain?: boolean;
  /**
   * Start sibling invocations through the platform when the backlog needs more than this one, up to
   * `maxInvocations` live across the cluster, and a successor when the budget ends with work due (see
   * docs/deploying.md). Default: off.
   */
  fanOut?: FanOutOptions;
}

/** A job whose run failed: it went back to `queued` to retry, or ended `failed`. @example for (const p of summary.problems) console.warn(p.task, p.error.message); */
export interface JobProblem { jobId: number; task: string; queue: string; attempt: number; to: JobState; error: { kind: string; message: string } }

/** What one invocation did. @example const { succeeded, roundTrips }: RunSummary = await runOnce(app, { db }); */
export interface RunSummary {
  id: string;
  claimed: number;
  succeeded: number;
  retried: number;
  snoozed: number;
  failed: number;
  cancelled: number;
  released: number;
  recovered: number;
  /** Jobs held back by their limit past their `limitWait`, ended `rate_limited` by this invocation's claims. */
  rateLimited: number;
  /**
   * Bodies that ignored their timeout and outlived its grace as well (the timeout again, or the lease if
   * longer): their timeout was recorded while they still ran, so their retry may run beside them.
   */
  abandoned: number;
  /** Outcomes that could not be recorded because the lease was lost (or the database stayed unreachable). */
  lost: number;
  /**
   * Outcomes whose statement's answer was lost (a dropped response, a request timeout): they may well be
   * recorded, and a retry could not tell (it found them settled already). Not counted in `lost`.
   */
  unconfirmed: number;
  /**
   * Tasks not claimed because their declared timeout does not fit what was left of the budget at a claim,
   * minus the claim's margin (CLAIM_MARGIN_MS until a round trip was measured, then a few round trips): their
   * jobs wait for an invocation with a longer budget. Empty when every task fits.
   */
  tooLongForBudget: string[];
  /** Every run that failed or will retry, with its error, for logs. */
  problems: JobProblem[];
  /** Statements sent to the database by the invocation itself. */
  roundTrips: number;
  durationMs: number;
  /** The drizzle driver the invocation ran on (`node-postgres`, `neon-http`, `neon-serverless`, `pglite`), for logs. */
  driver?: string;
  /** What fan-out did (only with the `fanOut` option). */
  fanOut?: FanOutReport;
}
