// A system's small sweep: each configuration burns down the same number of jobs, the fastest is kept for the
// head-to-head rounds, and every line is printed with the results.

/**
 * One configuration tried. `config` is what the system's runner takes back for the head-to-head; `error` is
 * the message of a configuration that did not run (its rate is NaN), quoted in the results.
 */
export interface SweepEntry<C = unknown> { system: string; settings: string; config: C; jobs: number; processPerSec: number; error?: string }

/** Runs one configuration; a failure becomes an entry with its error instead of ending the whole run. */
export async function tryConfig<C>(entry: Omit<SweepEntry<C>, "processPerSec">, measure: () => Promise<number>): Promise<SweepEntry<C>> {
  try {
    return { ...entry, processPerSec: await measure() };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(`[bench] ${entry.settings} did not run: ${message}`);
    return { ...entry, processPerSec: NaN, error: message };
  }
}

/** The fastest entry of a sweep (optionally only those `eligible`), or a clear error when none ran. */
export function best<C>(entries: SweepEntry<C>[], eligible: (config: C) => boolean = () => true): SweepEntry<C> {
  const candidates = entries.filter((e) => e.error === undefined && eligible(e.config));
  if (candidates.length === 0) throw new Error("a sweep produced no eligible configuration");
  return candidates.reduce((a, b) => (b.processPerSec > a.processPerSec ? b : a));
}
