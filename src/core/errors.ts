import { parseDuration, type Duration } from "./duration.js";
import { causeChain, type ErrorCause } from "./error-causes.js";

/** One entry of a job's `errors` history: every failed attempt appends one. @example const last = (row.errors as ErrorEntry[]).at(-1); */
export interface ErrorEntry {
  attempt: number; at: string; kind: string; message: string; stack: string | null;
  /** What was thrown, as JSON, when it was not an Error (`throw { code: 42 }`). */
  payload?: unknown;
  /** The errors the thrown one wraps (`cause`), outermost first: drizzle's holds Postgres's message and SQLSTATE. Also "caused by" lines in `message`. */
  causes?: ErrorCause[];
}

/** The `kind` of the errors entry a throwing `onTransition` hook leaves on its job (the change itself stands). */
export const TRANSITION_HOOK_FAILED = "TransitionHookFailed";

/** Base class of every error akadze raises itself. @example if (error instanceof AkadzeError) console.error(error.message); */
export class AkadzeError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Thrown by a task to retry after exactly `delay`, spending an attempt (no backoff policy, no clamp).
 * @example throw new Retry("10s");
 */
export class Retry extends AkadzeError {
  readonly delayMs: number;
  constructor(delay: Duration = 0, options?: { cause?: unknown }) {
    super(`retry requested in ${String(delay)}`, options);
    this.delayMs = parseDuration(delay, "Retry delay");
  }
}

/**
 * Thrown by a task to run again after `delay` without spending an attempt (polling).
 * @example if (status === "pending") throw new Snooze("30s");
 */
export class Snooze extends AkadzeError {
  readonly delayMs: number;
  constructor(delay: Duration) {
    super(`snoozed for ${String(delay)}`);
    this.delayMs = parseDuration(delay, "Snooze delay");
  }
}

/**
 * Thrown by a task to fail the job at once, whatever attempts remain.
 * @example throw new Fail("vendor rejected the export");
 */
export class Fail extends AkadzeError {}

/**
 * Thrown by a task to end its job as `cancelled` at once.
 * @example throw new Cancel();
 */
export class Cancel extends AkadzeError {
  constructor(message = "cancelled by the task") { super(message); }
}

/** Enqueue refused: a job with the same `uniqueKey` is queued or running. @example try { await t.using(db, { uniqueKey: "k" }).enqueue({}); } catch (e) { if (!(e instanceof DuplicateJob)) throw e; } */
export class DuplicateJob extends AkadzeError {
  constructor(readonly uniqueKey: string, options?: { cause?: unknown }) {
    super(`a job with uniqueKey ${JSON.stringify(uniqueKey)} is already queued or running`, options);
  }
}

/** Arguments or options that fail validation; nothing was written. @example await sendMail.using(db).enqueue({ userId: "x" }); // throws InvalidInput */
export class InvalidInput extends AkadzeError {}

/**
 * `createSchedule` refused: a schedule (made at runtime, or recorded from an app's code) already has this name;
 * nothing was written. @example try { await createSchedule(db, entry, { app }); } catch (e) { if (e instanceof DuplicateSchedule) await updateSchedule(db, entry.name, change, { app }); }
 */
export class DuplicateSchedule extends InvalidInput {
  constructor(readonly scheduleName: string) {
    super(`schedule ${JSON.stringify(scheduleName)} already exists: change it with updateSchedule, or delete it first`);
  }
}

/** This run no longer owns the job's lease; completeTx/completeBatch rolled back. @example catch (e) { if (e instanceof LeaseLost) return; } */
export class LeaseLost extends AkadzeError {}

/** A task returned a value that is not JSON (Date, Map, class instance, BigInt, cycle); an attempt is spent. @example return { at: date.toISOString() }; // not `date` */
export class ResultNotJson extends AkadzeError {}

/** A task ran past its timeout; `job.signal` aborted with it and an attempt is spent. @example app.task("t", { timeout: "5s" }, async (_a, job) => fetch(url, { signal: job.signal })); */
export class JobTimeout extends AkadzeError {}

/** Postgres unique_violation on the active-unique-key index, from any driver's error shape. */
export function isUniqueKeyViolation(error: unknown): boolean {
  return causeChain(error).some((e) => e.code === "23505" &&
    (e.constraint === "jobs_unique_key_active" || String(e.message).includes("jobs_unique_key_active")));
}

/** The key named in a unique_violation's detail ("Key (unique_key)=(k) already exists."), where the driver passes it on. */
export function uniqueKeyOfViolation(error: unknown): string | null {
  for (const e of causeChain(error)) {
    const match = /Key \(unique_key\)=\((.*)\) already exists/.exec(String(e.detail ?? ""));
    if (match) return match[1];
  }
  return null;
}
