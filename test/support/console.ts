// What reached the console while some code ran: routes log to console.error, the cron handler and the
// invocation log lines to console.log and console.warn.
import { vi } from "vitest";

type Level = "log" | "warn" | "error";

/**
 * Runs `fn` with the `levels` of the console captured (and kept off the test output); returns its result and
 * each level's calls, as argument lists.
 * @example const { calls } = await captureConsole(["error"], () => web.fetch(request)); expect(calls.error).toHaveLength(1);
 */
export async function captureConsole<T, L extends Level>(levels: L[], fn: () => Promise<T> | T): Promise<{ result: T; calls: Record<L, unknown[][]> }> {
  const calls = Object.fromEntries(levels.map((level) => [level, [] as unknown[][]])) as Record<L, unknown[][]>;
  const target = console as unknown as Record<string, (...args: unknown[]) => void>;
  const spies = levels.map((level: Level) => vi.spyOn(target, level).mockImplementation((...args: unknown[]) => { calls[level as L].push(args); }));
  try {
    return { result: await fn(), calls };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}
