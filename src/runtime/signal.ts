/**
 * A level-triggered wake-up: `wait()` resolves at the next `notify()`, or at once if one came while nobody
 * waited; a wait that timed out or was aborted leaves no stale waiter behind to swallow the next notify.
 * It resolves true when a notify ended it, false when its time ran out or the signal aborted.
 */
export class Wakeup {
  private pending = false;
  private readonly waiters = new Set<() => void>();

  notify(): void {
    if (this.waiters.size === 0) { this.pending = true; return; }
    for (const waiter of [...this.waiters]) waiter();
  }

  wait(ms = Infinity, signal?: AbortSignal): Promise<boolean> {
    if (this.pending || signal?.aborted) {
      const notified = this.pending;
      this.pending = false;
      return Promise.resolve(notified);
    }
    return new Promise((resolve) => {
      const end = (notified: boolean) => {
        this.waiters.delete(woken);
        clearTimeout(timer);
        signal?.removeEventListener("abort", lapsed);
        resolve(notified);
      };
      const woken = () => end(true);
      const lapsed = () => end(false);
      const timer = Number.isFinite(ms) ? setTimeout(lapsed, ms) : undefined;
      this.waiters.add(woken);
      signal?.addEventListener("abort", lapsed, { once: true });
    });
  }
}

/** Resolves after the current macrotask, so work that finishes in the same turn is batched together. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/**
 * Resolves once the event loop has run what waits outside the microtask queue: process.nextTick callbacks (Node
 * runs them only once the microtask queue is empty) and I/O. Where there is no setImmediate, after a timer.
 */
export function yieldToIo(): Promise<void> {
  return new Promise((resolve) => { if (typeof setImmediate === "function") setImmediate(resolve); else setTimeout(resolve, 0); });
}

/** Waits `ms`, or less if `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => { clearTimeout(timer); signal?.removeEventListener("abort", done); resolve(); };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** A promise opened once, for everyone waiting on it now or later. */
export class Latch {
  private open_: () => void = () => {};
  readonly opened = new Promise<void>((resolve) => { this.open_ = resolve; });
  open(): void { this.open_(); }
}

/**
 * A job's abort switch. Its AbortSignal is made only when a body or hook asks for it (most never do, and
 * making one per job cost the engine about a tenth of its time on quick jobs); a signal asked for after the
 * abort comes already aborted, with the same reason.
 */
export class JobAbort {
  private controller: AbortController | null = null;
  aborted = false;
  reason: unknown = undefined;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

/** A statement whose answer did not come within its request timeout: it may still run, and may have committed. */
export class RequestTimeout extends Error {
  override name = "RequestTimeout";
}

/**
 * `promise`, or a RequestTimeout after `ms` (Infinity: no timeout). The request itself is not stopped (the
 * HTTP driver takes no signal per statement): the caller only stops waiting for it, inside its budget.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  if (!Number.isFinite(ms)) return promise;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RequestTimeout(`${what} got no answer within ${Math.round(ms)} ms`)), Math.max(0, ms));
  });
  promise.catch(() => {}); // a late failure of an abandoned request is nobody's to report
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}
