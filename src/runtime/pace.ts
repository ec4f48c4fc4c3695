import type { App } from "../app/app.js";
import { memoryOf } from "./process-memory.js";

/**
 * Jobs started ahead of free slots are capped at this many batches of slots, and at this many claims' worth.
 * (No-op jobs over a 10 ms round trip would start some 1,000 per slot within it. A claim starts only what this
 * allows beyond the jobs already held; the rest wait for start statements of their own. At 64, with 10 slots, a
 * worker lane's claims could not grow past a few hundred quick jobs without them, and a lane with quick jobs
 * waits on each claim in turn: 256, with a prefetch of 100 per slot, ran 15-25 % more jobs a second.)
 */
const MAX_LOOKAHEAD_SLOTS = 256;
const MAX_LOOKAHEAD_BATCHES = 4;


/**
 * How quick an invocation's jobs are against its round trips (moving averages), and so how many jobs to
 * start or claim ahead of the free slots: those that would finish within one round trip.
 */
export class Pace {
  private run: number | null;
  private roundTrip: number | null;

  constructor(private readonly app: App, private readonly slots: number, private readonly batchSize: number) {
    this.run = memoryOf(app).pace?.run ?? null;
    this.roundTrip = memoryOf(app).pace?.roundTrip ?? null;
  }

  /** Whether both a job's run and a round trip were measured: before that, `lookahead` is 0 for want of knowing. */
  get known(): boolean { return this.run !== null && this.roundTrip !== null; }

  /** The average round trip so far (`null` before the first). */
  get roundTripMs(): number | null { return this.roundTrip; }

  ranFor(ms: number): void { this.run = average(this.run, ms); }
  roundTripTook(ms: number): void { this.roundTrip = average(this.roundTrip, ms); }

  /** Jobs to start ahead of free slots: about as many as the slots finish within one round trip. */
  lookahead(): number {
    if (this.run === null || this.roundTrip === null) return 0;
    const perSlot = Math.min(this.roundTrip / Math.max(this.run, 0.01), MAX_LOOKAHEAD_SLOTS);
    return Math.min(MAX_LOOKAHEAD_BATCHES * this.batchSize, Math.round(this.slots * perSlot));
  }

  /** Leaves what was learned to the app's next invocation. */
  save(): void {
    if (this.run !== null && this.roundTrip !== null) memoryOf(this.app).pace = { run: this.run, roundTrip: this.roundTrip };
  }
}

/** The run time the app's last invocations in this process measured for its jobs (a moving average), or null. */
export function knownRunMs(app: App): number | null {
  return memoryOf(app).pace?.run ?? null;
}

function average(previous: number | null, ms: number): number {
  return previous === null ? ms : previous * 0.8 + ms * 0.2;
}
