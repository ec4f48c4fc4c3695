// Enqueue-to-start latency of an idle consumer, measured the same way for every system: after `warmUp` uncounted
// jobs, the consumer idles `idleMs`; then jobs come one at a time, each enqueued once the previous one started
// and a random gap passed, so every job meets a consumer that has just gone idle again; `idles` times over.
import { median, percentile, sleep, wallMs } from "./stats.js";

export interface Latency {
  p50: number; p95: number; max: number;
  /** The median of the jobs that met a consumer idle for `idleMs` (one per idle period), and each of them. */
  firstAfterIdle: number; firstsAfterIdle: number[];
  samples: number; how: string;
}

export interface LatencySettings {
  samples: number; idleMs: number; gapMs: [number, number];
  /**
   * Uncounted jobs first, in the same pattern: a consumer that has worked a while, its connections open and its
   * statements planned as in use. (Until 2026-12-04 one job: akadze's worker then met its first idle with its
   * claim planned afresh on the connection, 1.1-1.5 ms a time for its first six runs there, and the one
   * first-after-idle sample was often such a run.)
   */
  warmUp: number;
  /** Idle periods the samples are spread over: "first after idle" is a median of this many, not one sample. */
  idles: number;
}

/** What a job body calls with the enqueue time its arguments carry. */
export interface LatencyProbe { record(enqueuedAt: number): void; seen: number[] }

/** How long a job may take to start before the measurement gives up (a consumer that never wakes). */
const START_TIMEOUT_MS = 30_000;

export function latencyProbe(): LatencyProbe & { waitFor(n: number): Promise<void> } {
  const seen: number[] = [];
  let wake: (() => void) | null = null;
  return {
    seen,
    record(enqueuedAt) { seen.push(wallMs() - enqueuedAt); wake?.(); },
    async waitFor(n) {
      const deadline = wallMs() + START_TIMEOUT_MS;
      while (seen.length < n) {
        if (wallMs() > deadline) throw new Error(`latency: job ${n} did not start within ${START_TIMEOUT_MS} ms`);
        await new Promise<void>((resolve) => { wake = resolve; setTimeout(resolve, 100); });
      }
    },
  };
}

/** Runs the arrival pattern against a started consumer; `enqueue` adds one job stamped with `t`. */
export async function measureLatency(settings: LatencySettings, probe: ReturnType<typeof latencyProbe>,
  enqueue: (t: number) => Promise<void>, how: string): Promise<Latency> {
  const [low, high] = settings.gapMs;
  let started = 0;
  const one = async () => { await enqueue(wallMs()); await probe.waitFor(++started); };
  const gap = () => sleep(low + Math.random() * (high - low));
  for (let i = 0; i < Math.max(1, settings.warmUp); i++) {
    await one();
    await gap();
  }
  const warm = started;
  const perIdle = Math.ceil(settings.samples / Math.max(1, settings.idles));
  const firsts: number[] = [];
  for (let i = 0; i < settings.samples; i++) {
    const afterIdle = i % perIdle === 0;
    await (afterIdle ? sleep(settings.idleMs) : gap());
    await one();
    if (afterIdle) firsts.push(probe.seen[started - 1]);
  }
  const seen = probe.seen.slice(warm);
  return {
    p50: percentile(seen, 50), p95: percentile(seen, 95), max: Math.max(...seen),
    firstAfterIdle: median(firsts), firstsAfterIdle: firsts, samples: seen.length, how,
  };
}
