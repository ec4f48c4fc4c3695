// The sizes every section runs at: the full run (what RESULTS.md is made of) and `--quick`, a smoke test of
// the whole harness in under a minute.
import type { Duration } from "../src/index.js";
import { AKADZE_DRIVERS, type AkadzeDriver } from "./akadze-db.js";
import type { FanOutSettings } from "./fan-out.js";
import type { FairnessSettings } from "./fairness.js";
import type { LatencySettings } from "./latency.js";

export interface BenchConfig {
  quick: boolean;
  /** No-op jobs per burn-down. */
  jobs: number;
  /** Interleaved rounds of the head-to-head burn-down; the median is reported. */
  rounds: number;
  /** Jobs per configuration in each system's sweep. */
  sweepJobs: number;
  /** An unrecorded run of each system first (0: none). */
  warmUpJobs: number;
  /** Jobs of the concurrency-10 comparison (runWorker vs graphile-worker). */
  workerJobs: number;
  /** akadze drivers of the burn-down table. */
  drivers: AkadzeDriver[];
  latency: LatencySettings;
  /** One cron invocation over a backlog of `jobMs` jobs, budget `budget`. */
  tick: { budget: Duration; jobMs: number; backlog: number };
  /** K concurrent runOnce loops (slots 8, batch 16) over `jobMs` I/O jobs; backlog K × 8 × `jobsPerSlot`. */
  scaleOut: { ks: number[]; jobsPerSlot: number; jobMs: number; neonK: number };
  /** runOnce calls per measured claim shape, EXPLAIN ANALYZE repetitions, and the backlog of the last row. */
  claimCost: { calls: number; explains: number; backlog: number };
  /** One cron schedule over neon-http for `windowMs` after its tick, at each fan-out width (0: none). */
  fanOut: FanOutSettings;
  /** One tenant's burst beside small tenants, 4 concurrent invocations; a fair claim's cost over many keys. */
  fairness: FairnessSettings;
  /** Jobs delayed by a day, enqueued beside the burn-down's `jobs` (the "delayed" section): reminders, runAt, backoffs. */
  delayed: number;
}

export const FULL: BenchConfig = {
  quick: false, jobs: 20_000, rounds: 5, sweepJobs: 10_000, warmUpJobs: 2_000, workerJobs: 10_000,
  drivers: [...AKADZE_DRIVERS],
  latency: { samples: 50, idleMs: 2_500, gapMs: [100, 300], warmUp: 20, idles: 5 },
  tick: { budget: "25s", jobMs: 100, backlog: 10_000 },
  scaleOut: { ks: [1, 4, 16, 32], jobsPerSlot: 50, jobMs: 20, neonK: 16 },
  claimCost: { calls: 200, explains: 30, backlog: 100_000 },
  fanOut: { widths: [0, 1, 4, 8, 16], windowMs: 60_000, budget: "25s", jobMs: 100, slots: 6, batchSize: 50, baselineWindows: 3 },
  fairness: { bigJobs: 50_000, smallKeys: 100, smallJobsPerKey: 10, invocations: 4, batchSize: 250, costKeys: [100, 10_000], costJobs: 50_000, costRuns: 20,
    costDelayed: { keys: 1_000, perKey: 1_000 }, costUnkeyed: 10_000 },
  delayed: 100_000,
};

export const QUICK: BenchConfig = {
  quick: true, jobs: 2_000, rounds: 1, sweepJobs: 1_000, warmUpJobs: 0, workerJobs: 500,
  drivers: ["node-postgres", "neon-http"],
  latency: { samples: 5, idleMs: 1_000, gapMs: [20, 80], warmUp: 2, idles: 1 },
  tick: { budget: "5s", jobMs: 100, backlog: 2_000 },
  scaleOut: { ks: [1, 4, 16, 32], jobsPerSlot: 6, jobMs: 20, neonK: 16 },
  claimCost: { calls: 30, explains: 5, backlog: 5_000 },
  fanOut: { widths: [0, 1, 4, 8, 16], windowMs: 10_000, budget: "4s", jobMs: 100, slots: 6, batchSize: 50, baselineWindows: 1 },
  fairness: { bigJobs: 5_000, smallKeys: 20, smallJobsPerKey: 10, invocations: 4, batchSize: 100, costKeys: [20, 1_000], costJobs: 5_000, costRuns: 3,
    costDelayed: { keys: 50, perKey: 100 }, costUnkeyed: 500 },
  delayed: 5_000,
};
