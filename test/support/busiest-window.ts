/**
 * The most starts inside any half-open window [t, t + windowMs): what a maxStarts limit promises to bound.
 * @example expect(busiestWindow(starts, 60_000)).toBe(10);
 */
export function busiestWindow(starts: number[], windowMs: number): number {
  const t = [...starts].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < t.length; i++) {
    while (j < t.length && t[j] < t[i] + windowMs) j++;
    most = Math.max(most, j - i);
  }
  return most;
}
