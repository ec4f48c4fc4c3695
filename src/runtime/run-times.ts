import { CLAIM_MARGIN_MS } from "../core/claim-margin.js";

/**
 * How long each task's runs took in one engine (a moving average, on the budget's clock), for the least
 * budget a job of a task without a timeout must have left to start: twice what its runs took, at most
 * CLAIM_MARGIN_MS (and that before any run). Otherwise the budget's end would cut it short and charge its
 * attempt: it is released unspent.
 * @example if (remaining < runTimes.floorMs(job.task)) release(job);
 */
export class RunTimes {
  private readonly averages = new Map<string, number>();

  /** A run of `task` took `ms`. */
  record(task: string, ms: number): void {
    const before = this.averages.get(task);
    this.averages.set(task, before === undefined ? ms : 0.8 * before + 0.2 * ms);
  }

  /** The least budget a job of `task` (without a timeout) must have left to start. */
  floorMs(task: string): number {
    const took = this.averages.get(task);
    return took === undefined ? CLAIM_MARGIN_MS : Math.min(CLAIM_MARGIN_MS, 2 * took);
  }
}
