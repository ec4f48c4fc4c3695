/**
 * An `onError` that writes each error as `describe` puts it, a line it wrote last at most once every `everyMs`:
 * a database outage repeats on every lane and poll, so it is said when it starts, then every 30 s while it lasts.
 * `now`: the clock it compares, in ms.
 */
export function throttledErrorReport(describe: (error: unknown) => string, write: (line: string) => void,
  o: { everyMs?: number; now?: () => number } = {}): (error: unknown) => void {
  const everyMs = o.everyMs ?? 30_000;
  const now = o.now ?? Date.now;
  let last: string | null = null;
  let lastAt = 0;
  return (error) => {
    const line = describe(error);
    const at = now();
    if (line === last && at - lastAt < everyMs) return;
    write(line);
    last = line;
    lastAt = at;
  };
}
