import { tryParseDuration, type Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";

/**
 * A test's clock: the app's own clock (the real one by default) moved forward by what the test advanced.
 * It never runs behind the app's clock, so a job your code enqueues at the database's `now()` (an app
 * without a clock of its own) is due at once on it, and a delay, a retry's backoff or a workflow's sleep
 * comes due when the test advances past it. It only moves forward: moving back would leave jobs already
 * run in the future.
 * @example t.clock.advance("5m"); await t.drain(); // the job delayed by five minutes ran
 */
export class TestClock {
  private offsetMs: number;

  /** `base`: the app's clock; `offsetMs`: how far ahead of it to start (the database's clock may run ahead of this host's). */
  constructor(private readonly base: () => Date, offsetMs = 0) {
    this.offsetMs = offsetMs;
  }

  /** The test's now. An arrow function, so it can be passed as a `now` option as it is. @example runOnce(app, { db, now: t.clock.now }) */
  readonly now = (): Date => new Date(this.base().getTime() + this.offsetMs);

  /** Moves the clock forward by `duration`; returns the new now. @example t.clock.advance("1d") */
  advance(duration: Duration): Date {
    const ms = tryParseDuration(duration);
    if (ms === undefined) {
      throw new InvalidInput(`clock.advance: give a non-negative duration such as 30_000 or "5m" (the clock only moves forward), got ${JSON.stringify(duration)}`);
    }
    this.offsetMs += ms;
    return this.now();
  }

  /**
   * Moves the clock forward to `at`; a moment it has passed already leaves it as it is (it follows the app's
   * clock, which goes on by itself). Returns the new now. @example t.clock.advanceTo(new Date(job.runAt))
   */
  advanceTo(at: Date): Date {
    if (!(at instanceof Date) || !Number.isFinite(at.getTime())) throw new InvalidInput(`clock.advanceTo: give a valid Date, got ${String(at)}`);
    this.offsetMs += Math.max(0, at.getTime() - this.now().getTime());
    return this.now();
  }

  /** How far the test has moved the clock ahead of the app's, in milliseconds. */
  get advancedMs(): number {
    return this.offsetMs;
  }
}
