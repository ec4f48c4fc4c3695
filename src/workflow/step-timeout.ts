import { StepTimeout } from "./errors.js";

/**
 * One attempt of a step under its own timeout: a timer (on the real clock) aborts the step's signal and fails
 * the attempt at once, and `finish()` (called just before the step stores its result) checks the run's clock
 * too, so a step that ran long without yielding, or past a test clock's time, times out as well. Once
 * `finish()` passes, the timeout no longer applies: the store that follows is never raced, so a result is
 * stored once or not at all. Without a timeout it is the job's signal and nothing else.
 */
export class StepDeadline {
  readonly signal: AbortSignal;
  private readonly controller: AbortController | null = null;
  private readonly expired: Promise<never> | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timedOut: StepTimeout | null = null;
  private readonly startedAt: number;
  private readonly startedMono = performance.now();

  constructor(private readonly step: string, private readonly timeoutMs: number | undefined, jobSignal: AbortSignal,
    private readonly clock: { now: () => Date; monotonic: boolean }) {
    this.startedAt = clock.now().getTime();
    if (timeoutMs === undefined) { this.signal = jobSignal; return; }
    this.controller = new AbortController();
    this.signal = AbortSignal.any([jobSignal, this.controller.signal]);
    this.expired = new Promise<never>((_, reject) => { this.timer = setTimeout(() => reject(this.expire()), timeoutMs); });
    this.expired.catch(() => {});
  }

  /** The attempt, or its StepTimeout once the timer fires first (the attempt itself runs on, and stores nothing). */
  race<T>(attempt: Promise<T>): Promise<T> {
    if (!this.expired) return attempt;
    attempt.catch(() => {});
    return Promise.race([attempt, this.expired]);
  }

  /** Throws StepTimeout if the attempt is past its timeout; otherwise disarms it for the store that follows. */
  finish(): void {
    if (this.timeoutMs === undefined) return;
    if (this.timedOut || this.overran()) throw this.expire();
    clearTimeout(this.timer);
  }

  dispose(): void {
    clearTimeout(this.timer);
  }

  private overran(): boolean {
    const mono = performance.now() - this.startedMono;
    const elapsed = this.clock.monotonic ? mono : Math.max(this.clock.now().getTime() - this.startedAt, mono);
    return elapsed > this.timeoutMs!;
  }

  private expire(): StepTimeout {
    if (!this.timedOut) {
      this.timedOut = new StepTimeout(this.step, this.timeoutMs!);
      this.controller?.abort(this.timedOut);
    }
    return this.timedOut;
  }
}
