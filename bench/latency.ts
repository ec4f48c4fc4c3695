// Enqueue-to-start latency of an idle consumer, measured the same way for every system: after one uncounted
// job, the consumer idles `idleMs`; then jobs come one at a time, each enqueued once the previous one started
// and a random gap passed, so every job meets a consumer that has just gone idle again.
import { percentile, sleep, wallMs } from "./stats.js";

export interface Latency { p50: number; p95: number; max: number; firstAfterIdle: number; samples: number; how: string }

export interface LatencySettings { samples: number; idleMs: number; gapMs: [number, number] }

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
  await enqueue(wallMs()); // warms the connections; not counted
  await probe.waitFor(1);
  await sleep(settings.idleMs);
  const [low, high] = settings.gapMs;
  for (let i = 0; i < settings.samples; i++) {
    await enqueue(wallMs());
    await probe.waitFor(i + 2);
    if (i + 1 < settings.samples) await sleep(low + Math.random() * (high - low));
  }
  const seen = probe.seen.slice(1);
  return { p50: percentile(seen, 50), p95: percentile(seen, 95), max: Math.max(...seen), firstAfterIdle: seen[0], samples: seen.length, how };
}
