// Enqueue-to-start latency of an idle consumer, measured the same way for every system: after `warmUp` uncounted
// jobs, the consumer idles `idleMs`; then jobs come one at a time, each enqueued once the previous one started
// and a random gap passed, so every job meets a consumer that has just gone idle again; `idles` times over.
// Several consumers measured together take their idle periods in turn (`interleavedLatency`).
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

/** A started consumer the arrival pattern runs against: `enqueue` adds one job stamped with `t`. */
export interface LatencyConsumer {
  probe: ReturnType<typeof latencyProbe>;
  enqueue(t: number): Promise<void>;
  /** How the consumer runs, for the results. */
  how: string;
  /** The arrival pattern's settings for this consumer measured alone, where not the run's (a nudged invocation has no idle wait). */
  settings?: Partial<LatencySettings>;
  close(): Promise<void>;
}

/** One consumer's samples: each job enqueued once the previous one started; the ones that met an idle consumer apart. */
class LatencySamples {
  private started = 0;
  private warm = 0;
  private readonly firsts: number[] = [];

  constructor(private readonly consumer: LatencyConsumer) {}

  async one(afterIdle: boolean): Promise<void> {
    await this.consumer.enqueue(wallMs());
    await this.consumer.probe.waitFor(++this.started);
    if (afterIdle) this.firsts.push(this.consumer.probe.seen[this.started - 1]);
  }

  /** The jobs so far were uncounted: the consumer has worked a while, its connections open and its statements planned. */
  warmedUp(): void {
    this.warm = this.started;
  }

  result(): Latency {
    const seen = this.consumer.probe.seen.slice(this.warm);
    return {
      p50: percentile(seen, 50), p95: percentile(seen, 95), max: Math.max(...seen),
      firstAfterIdle: median(this.firsts), firstsAfterIdle: this.firsts, samples: seen.length, how: this.consumer.how,
    };
  }
}

/** Runs the arrival pattern against one consumer (with its own settings, if it has any), then closes it. */
export async function measureLatency(settings: LatencySettings, consumer: LatencyConsumer): Promise<Latency> {
  return (await interleavedLatency({ ...settings, ...consumer.settings }, [{ system: "", open: async () => consumer }]))[0].latency;
}

/**
 * The arrival pattern against several consumers at once, so a drift in the machine's load over the minutes it
 * takes weighs on each alike (as the throughput rounds are interleaved). Every consumer is started and warmed up
 * first and stays started throughout. They share the idle periods: after each, every consumer's first job comes
 * at once, one after the other (the order rotating each period); then their jobs take turns, a gap of a share of
 * `gapMs` before each, so each consumer meets its next job `gapMs` after its last one started, as measured alone.
 * Each is closed at the end, whatever happened.
 */
export async function interleavedLatency(settings: LatencySettings, entries: { system: string; open(): Promise<LatencyConsumer> }[],
  log: (line: string) => void = () => {}): Promise<{ system: string; latency: Latency }[]> {
  const opened: { system: string; consumer: LatencyConsumer; samples: LatencySamples }[] = [];
  const [low, high] = settings.gapMs;
  const gap = (share: number) => sleep((low + Math.random() * (high - low)) / share);
  try {
    for (const e of entries) {
      const consumer = await e.open();
      opened.push({ system: e.system, consumer, samples: new LatencySamples(consumer) });
    }
    for (const o of opened) {
      for (let i = 0; i < Math.max(1, settings.warmUp); i++) {
        await o.samples.one(false);
        await gap(1);
      }
      o.samples.warmedUp();
    }
    const idles = Math.max(1, settings.idles);
    const perIdle = Math.ceil(settings.samples / idles);
    for (let period = 0; period < idles; period++) {
      if (opened.length > 1) log(`latency: idle period ${period + 1} of ${idles}`);
      const order = opened.map((_, k) => opened[(period + k) % opened.length]);
      await sleep(settings.idleMs);
      for (const o of order) await o.samples.one(true);
      for (let i = 1; i < perIdle; i++) {
        for (const o of order) {
          await gap(order.length);
          await o.samples.one(false);
        }
      }
    }
    return opened.map((o) => ({ system: o.system, latency: o.samples.result() }));
  } finally {
    for (const o of opened) await o.consumer.close().catch(() => {});
  }
}
