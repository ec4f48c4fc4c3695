// Small measuring helpers: wall time, rates, percentiles.

/** Milliseconds `fn` took, with its value. */
export async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const started = performance.now();
  const value = await fn();
  return { ms: performance.now() - started, value };
}

/** Items per second. */
export function rate(count: number, ms: number): number {
  return ms > 0 ? (count * 1000) / ms : 0;
}

/** The p-th percentile (0..100) by nearest rank. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1];
}

export function median(values: number[]): number {
  return percentile(values, 50);
}

/** One row of `rows` (at least one, all of one shape): each number field their median, every other field the first row's. */
export function medianRow<T extends object>(rows: T[]): T {
  const [first] = rows;
  const each = (key: string, value: unknown) => typeof value === "number" ? median(rows.map((row) => (row as Record<string, number>)[key])) : value;
  return Object.fromEntries(Object.entries(first).map(([key, value]) => [key, each(key, value)])) as T;
}

/** A share (0-1) as a whole percentage. */
export const pct = (n: number): string => `${(n * 100).toFixed(0)} %`;

/** Wall time in ms that is comparable across the process (for enqueue-to-start latency). */
export function wallMs(): number {
  return performance.timeOrigin + performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
