// A system's small sweep: each configuration burns down the same number of jobs, the fastest is kept for the
// head-to-head rounds, and every line is printed with the results.

/** One configuration tried. `config` is what the system's runner takes back for the head-to-head. */
export interface SweepEntry<C = unknown> { system: string; settings: string; config: C; jobs: number; processPerSec: number }

/** The fastest entry of a sweep (optionally only those `eligible`), or a clear error when none ran. */
export function best<C>(entries: SweepEntry<C>[], eligible: (config: C) => boolean = () => true): SweepEntry<C> {
  const candidates = entries.filter((e) => eligible(e.config));
  if (candidates.length === 0) throw new Error("a sweep produced no eligible configuration");
  return candidates.reduce((a, b) => (b.processPerSec > a.processPerSec ? b : a));
}
