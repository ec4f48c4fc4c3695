/** A promise and the function that resolves it, for a test to hand one side to a job and keep the other. */
export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve: (value: T) => void;
}

/**
 * A promise the test resolves when it chooses: a gate a job body waits on, or a signal it gives.
 * @example const release = deferred(); app.task("slow", () => release.promise); ... release.resolve();
 */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => { resolve = r; });
  return { promise, resolve };
}

/** Resolves once `signal` aborts, at once if it has already (an abort before the listener fires no event). */
export function abortedOf(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
