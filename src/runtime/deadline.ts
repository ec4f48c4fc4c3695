import type { BudgetClock, Moment } from "./budget-clock.js";

/** How often a deadline looks at its clock again: a caller's clock (a test's) moves by hand, not with timers. */
const RECHECK_MS = 250;

/** A deadline on an invocation's clock: `passed` resolves once it has passed; `cancel` stops its timer. */
export interface Deadline { passed: Promise<void>; cancel: () => void }

/**
 * Resolves once `ms` have passed since `from` on the budget's clock (at once if they have), never if `ms` is
 * infinite or it was cancelled first. Its timer never outlives it.
 * @example const d = deadline(budget, budget.mark(), 3000); await Promise.race([call, d.passed]); d.cancel();
 */
export function deadline(clock: BudgetClock, from: Moment, ms: number): Deadline {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let cancelled = false;
  const passed = new Promise<void>((resolve) => {
    if (!Number.isFinite(ms)) return;
    const look = () => {
      if (cancelled) return;
      const left = ms - clock.elapsedMs(from);
      if (left <= 0) resolve();
      else timer = setTimeout(look, Math.min(left + 1, RECHECK_MS));
    };
    look();
  });
  return { passed, cancel: () => { cancelled = true; clearTimeout(timer); } };
}
