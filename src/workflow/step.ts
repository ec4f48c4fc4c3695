import { parseDuration, type Duration } from "../core/duration.js";
import { boundedEntry, errorEntryOf } from "../core/error-entry.js";
import { Cancel, Fail, InvalidInput, LeaseLost, Snooze } from "../core/errors.js";
import { jsonProblem, MAX_RESULT_BYTES } from "../core/json.js";
import { retryDelay } from "../core/retry-policy.js";
import { queryJson, runAtomically, type BatchItem, type Db } from "../db/query.js";
import { traitsOf } from "../db/traits.js";
import { leaseLostOr } from "../sql/settle/complete-owned.js";
import { loadStepsStartingStatement, loadStepsStatement, type StoredStep } from "../sql/workflow/load-steps.js";
import { saveStepStatement, type StepWrite } from "../sql/workflow/save-step.js";
import { timestamp } from "../sql/time.js";
import type * as v from "valibot";
import type { ChildJob, ChildJobsOptions, Step, StepContext, StepName, StepOptions, WaitForEventOptions } from "../app/step.js";
import type { ArgsSchema, Task } from "../app/task.js";
import { ChildJobFailed, runChildJobs } from "./children.js";
import { OutcomeNotStorable, StepFailed, StepMisuse, StepParked, StepTimeout, WorkflowNondeterminism } from "./errors.js";
import { Journal } from "./journal.js";
import { labelOf, stepNames } from "./names.js";
import { patchedStep } from "./patches.js";
import { resolveStepPolicy, type ResolvedStepPolicy, type StepPolicy } from "./step-policy.js";
import { StepDeadline } from "./step-timeout.js";
import { sleepStep, waitStep } from "./waits.js";
import type { RunningJob, WorkflowRun } from "./workflow-run.js";

/**
 * One run's steps: the handler's `step`, and the run its kinds of step (waits, children, patches) share, as
 * `WorkflowRun` declares it. `runWorkflow` builds it, runs the handler with it, then asks `outcome()`.
 */
export class StepRunner implements Step, WorkflowRun {
  readonly journal = new Journal();
  readonly patchAnswers = new Map<string, boolean>();
  readonly seen = new Set<string>();
  seq = 0;
  private executed = 0;
  private parkMs: number | null = null;
  private failure: Error | null = null;
  private inflight: Promise<unknown>[] = [];
  readonly waiting = new Set<string>();
  readonly db: Db;

  constructor(readonly job: RunningJob, private readonly policy: StepPolicy, private readonly minStepTimeMs: number,
    private readonly signal: () => AbortSignal) {
    this.db = job.runtime.db;
  }

  /**
   * Reads the job's stored steps (one statement). With `startVersion`, a run that has stored nothing yet
   * records that it starts on that version, in the same statement.
   */
  async load(startVersion?: number): Promise<void> {
    const { owner, now } = this.job.runtime;
    const statement = startVersion === undefined ? loadStepsStatement(this.job.id)
      : loadStepsStartingStatement(owner, this.job.id, timestamp(now()), startVersion);
    this.journal.add(await queryJson<StoredStep[]>(this.db, statement) ?? []);
  }

  run<T>(step: StepName, fn: (ctx: StepContext) => T | Promise<T>, options?: StepOptions): Promise<Awaited<T>> {
    return this.runStep(step, options, async (seq, name, ctx, deadline) => {
      const value = await fn(ctx);
      deadline.finish();
      this.assertJson(name, value);
      await this.save(this.db, { name, seq, kind: "run", state: "done", result: value, attempts: ctx.attempt });
      return value;
    });
  }

  transaction<T>(step: StepName, fn: (tx: Db, ctx: StepContext) => Promise<T>, options?: StepOptions): Promise<T> {
    if (traitsOf(this.db).http) {
      return this.refuse(new StepMisuse(`step ${JSON.stringify(labelOf(step))}: step.transaction needs an interactive transaction, which neon-http does not have: use step.batch(name, (db) => [...queries])`));
    }
    return this.runStep(step, options, (seq, name, ctx, deadline) => this.db.transaction(async (tx) => {
      const value = await fn(tx as unknown as Db, ctx);
      deadline.finish(); // past its timeout: the app's writes roll back with the attempt
      this.assertJson(name, value);
      await this.save(tx as unknown as Db, { name, seq, kind: "run", state: "done", result: value, attempts: ctx.attempt });
      return value;
    }));
  }

  batch(step: StepName, build: (db: Db) => BatchItem[], options?: StepOptions): Promise<void> {
    return this.runStep(step, options, async (seq, name, ctx, deadline) => {
      const at = timestamp(this.job.runtime.now());
      const { owner } = this.job.runtime;
      try {
        await runAtomically(this.db, (d) => {
          const queries = build(d);
          deadline.finish(); // past its timeout the batch is not sent; once sent, nothing races it
          return [...queries, d.execute(saveStepStatement(owner, this.job.id, at, { name, seq, kind: "run", state: "done", attempts: ctx.attempt }))];
        });
      } catch (error) {
        throw this.leaseLostOr(error);
      }
    });
  }

  sleep(step: StepName, duration: Duration): Promise<void> {
    let ms: number;
    try { ms = parseDuration(duration, `step ${JSON.stringify(labelOf(step))}: sleep duration`); } catch (error) { return this.refuse(new InvalidInput((error as Error).message)); }
    return this.sleepUntil(step, new Date(this.now() + ms));
  }

  sleepUntil(step: StepName, at: Date): Promise<void> {
    return this.tracked(sleepStep(this, step, at));
  }

  waitForEvent<T = unknown>(step: StepName, options: WaitForEventOptions): Promise<T | null> {
    return this.tracked(waitStep<T>(this, step, options));
  }

  runJobs<S extends ArgsSchema, R>(step: StepName, task: Task<S, R>, args: v.InferInput<S>[], options?: ChildJobsOptions): Promise<ChildJob<R>[]> {
    return this.tracked(runChildJobs(this, step, task, args, options));
  }

  async invoke<S extends ArgsSchema, R>(step: StepName, task: Task<S, R>, args: v.InferInput<S>, options?: ChildJobsOptions): Promise<R> {
    const [child] = await this.runJobs(step, task, [args], options);
    if (child.state !== "succeeded") throw new ChildJobFailed(child);
    return child.result as R;
  }

  patched(id: string): Promise<boolean> {
    return this.tracked(patchedStep(this, id));
  }

  /** A step promise the run waits for before it ends, even if the handler stopped awaiting it. */
  private tracked<T>(step: Promise<T>): Promise<T> {
    this.inflight.push(step.catch(() => {}));
    return step;
  }

  /**
   * Waits for every step still running, then says how the run ends: `{ throw }` (a step failure, or a park
   * as a Snooze) or nothing (the handler's own return or throw stands).
   */
  async outcome(): Promise<Error | null> {
    while (this.inflight.length > 0) await Promise.allSettled(this.inflight.splice(0));
    if (this.failure) return this.failure;
    if (this.parkMs === null) return null;
    if (this.waiting.size > 0 && this.parkMs > 0) {
      // One more read: an event delivered while this run went on would otherwise wait for the next wake.
      const fresh = await queryJson<StoredStep[]>(this.db, loadStepsStatement(this.job.id));
      if ((fresh ?? []).some((s) => this.waiting.has(s.name) && s.state !== "waiting")) this.parkMs = 0;
    }
    return new StepParked(this.parkMs);
  }

  /** A run-kind step: memoized, yields on a short budget, retried with the step's own policy. */
  private runStep<T>(step: StepName, options: StepOptions | undefined,
    exec: (seq: number, name: string, ctx: StepContext, deadline: StepDeadline) => Promise<T>): Promise<Awaited<T>> {
    let seq: number, name: string;
    try { ({ seq, name } = this.enter(step, "run")); } catch (error) { return Promise.reject(error); }
    const stored = this.journal.steps.get(name);
    if (stored?.state === "done") return Promise.resolve((stored.hasResult ? stored.result : undefined) as Awaited<T>);
    // A workflow requeued after a step gave up starts that step's attempts afresh.
    const attempt = (stored?.state === "retrying" ? stored.attempts : 0) + 1;
    if (this.executed > 0 && this.job.deadline - this.now() < this.minStepTimeMs) return Promise.reject(this.park(0));
    // Cancelled, timed out or lease lost: start nothing more (a cancel request then ends the job cancelled).
    if (this.signal().aborted) return Promise.reject(this.park(0));
    let policy: ResolvedStepPolicy;
    try { policy = resolveStepPolicy(name, this.policy, options); } catch (error) { return this.refuse(error as Error); }
    const running = (async (): Promise<Awaited<T>> => {
      const deadline = new StepDeadline(name, policy.timeoutMs, this.signal(), this.job.runtime);
      // Traced: the step is a child span of its run, active while its function runs.
      const span = this.job.trace === null ? null : this.job.trace.step(name, "run", attempt);
      try {
        const ctx = { attempt, signal: deadline.signal };
        const value = await deadline.race(span === null ? exec(seq, name, ctx, deadline) : span.within(() => exec(seq, name, ctx, deadline)));
        span?.end();
        this.executed++;
        return value as Awaited<T>;
      } catch (error) {
        span?.end(error);
        throw await this.failed(name, seq, attempt, policy, error);
      } finally {
        deadline.dispose();
      }
    })();
    this.inflight.push(running.catch(() => {}));
    return running;
  }

  /** Records a step's failure and returns what to throw: a park for the backoff, or the workflow's failure. */
  private async failed(name: string, seq: number, attempt: number, policy: ResolvedStepPolicy, error: unknown): Promise<Error> {
    if (error instanceof StepParked || error instanceof LeaseLost) return error;
    if (error instanceof Snooze) return this.park(error.delayMs); // polling inside a step: no attempt counted
    if (error instanceof Fail || error instanceof Cancel) return this.fail(error);
    // A step's timeout is retried whatever retryOn says, as a job's is.
    const delayMs = retryDelay(error, attempt, policy, (e) => e instanceof StepTimeout);
    try {
      await this.save(this.db, { name, seq, kind: "run", state: delayMs === null ? "failed" : "retrying", attempts: attempt, error: boundedEntry(errorEntryOf(error, attempt, this.job.runtime.now())) });
    } catch (saveError) {
      return saveError as Error; // the lease is lost or the database is away: the job's own retry handles it
    }
    if (delayMs === null) return this.fail(new StepFailed(name, attempt, error));
    return this.park(delayMs);
  }

  /**
   * Checks the name (valid, unused in this run, at the position it had when stored), takes the next position,
   * and answers the name the step is stored under: its own, or the first of its `formerly` names the run stored.
   */
  enter(step: StepName, kind: StoredStep["kind"]): { seq: number; name: string } {
    this.assertGoing();
    let names: string[];
    try { names = stepNames(step); } catch (error) { throw this.fail(new StepMisuse((error as Error).message)); }
    const name = names.find((n) => this.journal.steps.has(n)) ?? names[0];
    for (const taken of new Set([names[0], name])) this.take(taken);
    const seq = this.seq++;
    const stored = this.journal.steps.get(name);
    const atSeq = this.journal.bySeq.get(seq);
    if ((stored && (stored.seq !== seq || stored.kind !== kind)) || (atSeq && atSeq.name !== name)) {
      const was = atSeq ? `${JSON.stringify(atSeq.name)} (${atSeq.kind})` : "no step";
      throw this.fail(new WorkflowNondeterminism(`workflow replay reached step ${JSON.stringify(name)} (${kind}) as step #${seq + 1}, where the stored run had ${was}: ` +
        "a workflow must reach its steps in the same order on every run (branch only on step results, or on step.patched to change a deployed workflow)"));
    }
    return { seq, name };
  }

  /** Marks a name as taken in this run (by a step or a patch); one taken twice fails the run. */
  take(name: string): void {
    if (this.seen.has(name) || this.journal.patches.has(name)) {
      throw this.fail(new WorkflowNondeterminism(`step name ${JSON.stringify(name)} is used twice in this workflow: give each step its own name (e.g. \`mail-\${i}\` in a loop)`));
    }
    this.seen.add(name);
  }

  async save(db: Db, write: StepWrite): Promise<void> {
    const { owner, now } = this.job.runtime;
    try {
      await queryJson(db, saveStepStatement(owner, this.job.id, timestamp(now()), write));
    } catch (error) {
      throw this.leaseLostOr(error);
    }
  }

  leaseLostOr(error: unknown): unknown {
    return leaseLostOr(error, this.job.id, "the step's writes");
  }

  /** A result is stored only if it is JSON Postgres can hold, within the size a task's result may have. */
  private assertJson(name: string, value: unknown): void {
    if (value === undefined) return;
    const problem = jsonProblem(value, "result");
    if (problem !== null) throw this.fail(new StepMisuse(`step ${JSON.stringify(name)} returned a value that is not JSON: ${problem}`));
    const size = new TextEncoder().encode(JSON.stringify(value)).length;
    if (size > MAX_RESULT_BYTES) {
      throw this.fail(new OutcomeNotStorable(`step ${JSON.stringify(name)}: the result is ${size} bytes of JSON, over the ${MAX_RESULT_BYTES}-byte cap: store large results in your own tables`));
    }
  }

  /** Parks the run (the earliest of its parks wins) and returns what the step call throws. */
  park(ms: number): StepParked {
    this.parkMs = Math.max(0, Math.min(this.parkMs ?? Infinity, ms));
    return new StepParked(this.parkMs);
  }

  /** Throws what every step call throws once the run has failed or parked. */
  assertGoing(): void {
    if (this.failure) throw this.failure;
    if (this.parkMs !== null) throw new StepParked(this.parkMs);
  }

  fail(error: Error): Error {
    this.failure ??= error;
    return this.failure;
  }

  private refuse<T>(error: Error): Promise<T> {
    return Promise.reject(this.fail(error));
  }

  now(): number {
    return this.job.runtime.now().getTime();
  }
}
