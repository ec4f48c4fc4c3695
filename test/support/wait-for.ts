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
