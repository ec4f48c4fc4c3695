/** A moment to measure from: the caller's clock and the monotonic one. */
export interface Moment { clock: number; mono: number }

/**
 * An invocation's budget, measured on one clock: with the real clock (`monotonic`) on the monotonic clock
 * alone, so a wall-clock step can neither cut a budget short nor stretch it; with a caller's clock (tests), on
 * that clock.
 * @example const budget = new BudgetClock(now, true, 25_000); if (budget.remainingMs() <= 0) stop();
 */
export class BudgetClock {
  readonly began: Moment;

  constructor(private readonly now: () => Date, readonly monotonic: boolean, private readonly budgetMs: number) {
    this.began = { clock: now().getTime(), mono: performance.now() };
  }

  /** A moment to measure from with `elapsedMs` (the caller's clock is not read when it is not the one used). */
  mark(): Moment {
    return { clock: this.monotonic ? 0 : this.now().getTime(), mono: performance.now() };
  }

  /** Time since `since` (default: the start). */
  elapsedMs(since: Moment = this.began): number {
    return this.monotonic ? performance.now() - since.mono : this.now().getTime() - since.clock;
  }

  /**
   * Calls `then` once, when the budget is spent (never without one); returns a cancel. A timer can fire a
   * little before its delay has passed on the monotonic clock (libuv measures it from the loop's cached
   * time), so one that finds budget left is set again, rather than leaving the end unnoticed.
   */
  whenSpent(then: () => void): () => void {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      const left = this.remainingMs();
      if (!Number.isFinite(left)) return;
      if (left <= 0) then();
      else timer = setTimeout(arm, left + 1);
    };
    arm();
    return () => clearTimeout(timer);
  }

  /** What is left of the budget (Infinity without one). */
  remainingMs(): number {
    return this.budgetMs - this.elapsedMs();
  }
}
