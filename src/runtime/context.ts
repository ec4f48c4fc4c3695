import { AsyncLocalStorage } from "node:async_hooks";
import type { SQL } from "drizzle-orm";
import { AkadzeError, Fail } from "../core/errors.js";
import { emitTransitions, type Hooks } from "../app/hooks.js";
import { queryJson, runAtomically, type BatchItem, type Db } from "../db/query.js";
import { traitsOf } from "../db/traits.js";
import { isJsonValue } from "../core/json.js";
import { completeOwnedStatement, leaseLostOr } from "../sql/settle/complete-owned.js";
import { keepResultStatement } from "../sql/settle/keep-result.js";
import { timestamp } from "../sql/time.js";
import { RunProgress } from "./progress.js";
import type { RunTrace } from "../core/tracing.js";

/** The job a body is running, with ways to complete it together with the body's own writes. @example const job: CurrentJob = current(); */
export class CurrentJob {
  /** True once completeTx/completeBatch committed: the job is `succeeded` whatever the body does next. */
  completed = false;
  /** The `finished_at` the completion wrote; the body's return value is kept against it. */
  private completedAt: Date | undefined;
  /** The run's progress and log lines, made by the first `progress` or `log` call (a run that reports nothing pays nothing). */
  reports: RunProgress | undefined;

  constructor(
    readonly id: number,
    private readonly run: { db: Db; owner: string; now: () => Date; sqlNow: () => SQL; hooks: Hooks; task: string; queue: string; attempt: number;
      /** False: the completion deletes the job with no history row, and no result is kept. */
      keepSucceeded?: boolean; timeoutMs?: number;
      /** `now` is the real clock: a step's timeout is measured on the monotonic clock alone. */
      monotonic?: boolean;
      /** The run's span, when the app traces. */
      trace?: RunTrace | null },
  ) {
    this.trace = run.trace ?? null;
    // (Without a timeout the clock is not read: a no-op job's run is cheap enough for a Date to show.)
    const timeoutMs = run.timeoutMs ?? Infinity;
    this.deadline = Number.isFinite(timeoutMs) ? run.now().getTime() + timeoutMs : Infinity;
  }

  /** When this run's timeout (or its invocation's budget) ends, by the invocation's clock; a workflow yields before it. */
  readonly deadline: number;

  /** @internal The run's span, when the app traces (its workflow steps are its children); null: untraced. */
  readonly trace: RunTrace | null;

  /** The database this run claimed the job from (`job.db` in the body). */
  get db(): Db { return this.run.db; }

  /** What a workflow's steps need to store their results as this run: its database, lease owner and clocks. */
  get runtime(): { db: Db; owner: string; now: () => Date; sqlNow: () => SQL; monotonic: boolean } {
    const { db, owner, now, sqlNow, monotonic } = this.run;
    return { db, owner, now, sqlNow, monotonic: monotonic === true };
  }

  /**
   * Reports how far the job has got: any JSON value of at most 16 KiB (`MAX_PROGRESS_BYTES`), shown by `getJob`, the
   * CLI, the dashboard and the event stream of `akadze/hono`. Calls are coalesced: one write in flight per run, the
   * latest value pending, and the last one written before the outcome. A value that is not JSON or too large throws
   * `InvalidInput`; a failed write never fails the job.
   * @example for (const [i, row] of rows.entries()) { await load(row); job.progress({ done: i + 1, of: rows.length }); }
   */
  progress(value: unknown): void {
    (this.reports ??= this.newReports()).progress(value);
  }

  /**
   * Adds a line to the job's log, kept with the job and its attempt (at most 200 lines and 64 KiB per job; the rest
   * are counted as dropped). The parts are joined by spaces: strings as they are, errors by their message, the
   * rest as JSON. Written coalesced, like `progress`.
   * @example job.log("fetched", rows.length, "rows from", source);
   */
  log(...parts: unknown[]): void {
    (this.reports ??= this.newReports()).log(parts);
  }

  private newReports(): RunProgress {
    const { db, owner, attempt, now, sqlNow } = this.run;
    return new RunProgress({ db, jobId: this.id, owner, attempt, now, sqlNow });
  }

  /**
   * Runs `block` in a transaction that also marks this job `succeeded`: both commit or neither does.
   * Throws LeaseLost (rolling the block back) if this run no longer owns the job. Not on neon-http:
   * use `completeBatch` there (on neon-http it throws `Fail`, ending the job at once: no retry could succeed).
   * @example
   * await current().completeTx(async (tx) => {
   *   await tx.update(reports).set({ ready: true }).where(eq(reports.id, id));
   *   await notify.using(tx).enqueue({ id });
   * });
   */
  async completeTx<T>(block: (tx: Db) => Promise<T>): Promise<T> {
    const { db } = this.run;
    if (traitsOf(db).http) {
      // A misuse no retry can mend: Fail ends the job now instead of spending every attempt on it.
      throw new Fail("completeTx needs an interactive transaction, which the neon-http driver does not have: " +
        "use current().completeBatch((db) => [...queries]) instead");
    }
    this.assertOpen();
    await this.reports?.close();
    const at = this.run.now();
    const value = await db.transaction(async (tx) => {
      await this.markSucceeded(tx as unknown as Db, at);
      return block(tx as unknown as Db);
    });
    this.markCompleted(at);
    return value;
  }

  /**
   * Runs the queries `build` returns and marks this job `succeeded`, all as one transaction
   * (one `db.batch` request on neon-http, a transaction elsewhere).
   * @example await current().completeBatch((db) => [db.update(reports).set(r), notify.using(db).enqueueQuery({ id })]);
   */
  async completeBatch(build: (db: Db) => BatchItem[]): Promise<void> {
    this.assertOpen();
    // Reports go out before the completion: once the job has ended, a run's write changes nothing.
    await this.reports?.close();
    const { owner, hooks } = this.run;
    const at = this.run.now();
    const needsTx = hooks.transition.length > 0 && !traitsOf(this.run.db).http;
    try {
      if (needsTx) {
        await this.run.db.transaction(async (tx) => {
          await this.markSucceeded(tx as unknown as Db, at);
          await runAtomically(tx as unknown as Db, build);
        });
      } else {
        await runAtomically(this.run.db, (d) => [d.execute(completeOwnedStatement(owner, this.run.attempt, timestamp(at), this.id, null, this.run.keepSucceeded !== false)), ...build(d)]);
        await emitTransitions(hooks, [this.transition()], this.run.db);
      }
    } catch (error) {
      throw leaseLostOr(error, this.id);
    }
    this.markCompleted(at);
  }

  /**
   * Keeps what the body returned after completeTx/completeBatch as the job's result: one more statement,
   * and only for a JSON value (the job is already `succeeded`, so a value JSON cannot hold is not stored).
   */
  async keepResult(value: unknown): Promise<void> {
    if (!this.completedAt || value === undefined || !isJsonValue(value) || this.run.keepSucceeded === false) return;
    await this.run.db.execute(keepResultStatement(this.id, this.completedAt, value));
  }

  private markCompleted(at: Date): void {
    this.completed = true;
    this.completedAt = at;
  }

  private async markSucceeded(tx: Db, at: Date): Promise<void> {
    try {
      await queryJson(tx, completeOwnedStatement(this.run.owner, this.run.attempt, timestamp(at), this.id, null, this.run.keepSucceeded !== false));
    } catch (error) {
      throw leaseLostOr(error, this.id);
    }
    await emitTransitions(this.run.hooks, [this.transition()], tx);
  }

  private transition() {
    const { task, queue, attempt } = this.run;
    return { jobId: this.id, task, queue, attempt, from: "running" as const, to: "succeeded" as const };
  }

  private assertOpen(): void {
    if (this.completed) throw new AkadzeError(`job ${this.id} is already completed`);
  }
}

const storage = new AsyncLocalStorage<CurrentJob>();

/** Runs `fn` outside any job's `current()` (a batch task's handler serves many jobs, so none is current). */
export function outsideCurrentJob<T>(fn: () => T): T {
  return storage.exit(fn);
}

/** Runs `fn` with `job` as `current()`. */
export function withCurrentJob<T>(job: CurrentJob, fn: () => T): T {
  return storage.run(job, fn);
}

/**
 * The job the calling task body is running.
 * @example await current().completeTx(async (tx) => { ... });
 */
export function current(): CurrentJob {
  const job = storage.getStore();
  if (!job) throw new AkadzeError("current() is only available inside a running task");
  return job;
}
