/**
 * Polls `condition` until it holds, for work another process or runtime does on its own (a Worker's
 * waitUntil, a dev server's tick). Fails with `what` if it never does. Not a way to let time pass.
 * @example await waitFor(async () => (await rows("select ...")).length === 0, "the nudge to finish");
 */
export async function waitFor(condition: () => Promise<boolean>, what = "the condition", timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
