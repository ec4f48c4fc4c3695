// One run of a workflow as its kinds of step (waits, children, patches) see it. The step runner (step.ts)
// implements it; they depend on this, not on the runner, so the runner can import them.
import type { SQL } from "drizzle-orm";
import type { RunTrace } from "../core/tracing.js";
import type { Db } from "../db/query.js";
import type { StoredStep } from "../sql/workflow/load-steps.js";
import type { StepWrite } from "../sql/workflow/save-step.js";
import type { StepName } from "../app/step.js";
import type { StepParked } from "./errors.js";
import type { Journal } from "./journal.js";

/**
 * The job a workflow runs as, as the runtime hands it over (its `CurrentJob`): its id, database, lease owner
 * and clocks, when its time ends, and its span.
 */
export interface RunningJob {
  readonly id: number;
  readonly runtime: { db: Db; owner: string; now: () => Date; sqlNow: () => SQL; monotonic: boolean };
  /** When the run's timeout (or its invocation's budget) ends, by the invocation's clock. */
  readonly deadline: number;
  readonly trace: RunTrace | null;
}

/** What a kind of step needs of its run: what earlier runs stored, and how a step is entered, stored, parked or failed. */
export interface WorkflowRun {
  readonly job: RunningJob;
  readonly db: Db;
  /** What the run's earlier runs stored. */
  readonly journal: Journal;
  /** Names taken in this run, by steps and patches. */
  readonly seen: Set<string>;
  /** The answers `patched` gave in this run, by id. */
  readonly patchAnswers: Map<string, boolean>;
  /** Event waits this run left waiting: re-read before parking, so an event that came meanwhile is not slept through. */
  readonly waiting: Set<string>;
  /** The next step's position. */
  readonly seq: number;
  /** Checks a step's name and position and takes the next position; answers the name it is stored under. */
  enter(step: StepName, kind: StoredStep["kind"]): { seq: number; name: string };
  /** Marks a name as taken (by a step or a patch); one taken twice fails the run. */
  take(name: string): void;
  /** Reads the job's stored steps again. */
  load(): Promise<void>;
  /** Stores a step as this run (LeaseLost when the run no longer owns the job). */
  save(db: Db, write: StepWrite): Promise<void>;
  /** Parks the run (the earliest park wins) and returns what the step call throws. */
  park(ms: number): StepParked;
  /** Fails the run (the first failure wins) and returns what the step call throws. */
  fail(error: Error): Error;
  /** Throws what every step call throws once the run has failed or parked. */
  assertGoing(): void;
  /** LeaseLost for an error that says the run lost its lease; else the error. */
  leaseLostOr(error: unknown): unknown;
  /** The run's clock, in ms. */
  now(): number;
}
