/** How long `waitFor` keeps trying, and how often it looks. */
export interface WaitOptions {
  /** Give up after this long (default 20 s): every wait in the suite has a deadline. */
  timeoutMs?: number;
  /** Between two looks (default 50 ms). */
  intervalMs?: number;
}

/**
 * Polls `condition` until it holds, for work another process, runtime or task does on its own (a Worker's
 * waitUntil, a dev server's tick, a job reaching its handler). Fails with `what` if it never does. Not a
 * way to let time pass. A condition that throws ends the wait with its error.
 * @example await waitFor(async () => (await rows("select ...")).length === 0, "the nudge to finish");
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, what = "the condition", options: WaitOptions = {}): Promise<void> {
  const { timeoutMs = 20_000, intervalMs = 50 } = options;
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * The promise, or a rejection naming `what` after `ms`: a deadline on a wait for an event (a child process's
 * message, an invocation's return), to be set below the test's own timeout.
 * @example const totals = await within(loop.done, 20_000, "the loop's totals");
 */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([promise, new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} had not come after ${ms} ms`)), ms); })])
    .finally(() => clearTimeout(timer));
}
