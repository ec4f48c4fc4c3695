// The shape of bench/results.json, and the ratios and targets derived from the measurements.
import type { IdleCost, Latency, StatementsPerJob, Throughput } from "./akadze.js";
import type { AkadzeDriver } from "./akadze-db.js";
import { median } from "./stats.js";

export interface Machine { nproc: number; cpu: string; memory: string; node: string; postgres: string; loadStart: number[]; loadEnd: number[] }

export interface Results {
  startedAt: string;
  durationS: number;
  machine: Machine;
  settings: { command: string; jobs: number; rounds: number; systems: Record<string, string> };
  /** Median over rounds, per system ("akadze/<driver>", "graphile-worker", "pg-boss"). */
  throughput: Record<string, Throughput>;
  /** Every round's sample, for the record. */
  samples: Record<string, Throughput[]>;
  /** akadze system -> peer -> akadze rate / peer rate. */
  ratios: Record<string, Record<string, { enqueue: number; processing: number }>>;
  statementsPerJob: (StatementsPerJob & { driver: AkadzeDriver })[];
  latency: (Latency & { system: string })[];
  idle: (IdleCost & { driver: AkadzeDriver })[];
  targets: { name: string; goal: string; measured: string; met: boolean }[];
}

export const PEERS = ["graphile-worker", "pg-boss"] as const;

/** The median sample of each system (rates taken independently). */
export function medianThroughput(samples: Throughput[]): Throughput {
  return {
    enqueuePerSec: median(samples.map((s) => s.enqueuePerSec)),
    processPerSec: median(samples.map((s) => s.processPerSec)),
    enqueueMs: median(samples.map((s) => s.enqueueMs)),
    processMs: median(samples.map((s) => s.processMs)),
    transactionsPerJob: samples[0].transactionsPerJob === null ? null : median(samples.map((s) => s.transactionsPerJob ?? NaN)),
  };
}

export function ratios(throughput: Record<string, Throughput>): Results["ratios"] {
  const out: Results["ratios"] = {};
  for (const [name, t] of Object.entries(throughput)) {
    if (!name.startsWith("akadze/")) continue;
    out[name] = {};
    for (const peer of PEERS) {
      const p = throughput[peer];
      if (p) out[name][peer] = { enqueue: t.enqueuePerSec / p.enqueuePerSec, processing: t.processPerSec / p.processPerSec };
    }
  }
  return out;
}

/** The targets, checked against this run. */
export function targets(r: Pick<Results, "ratios" | "statementsPerJob">): Results["targets"] {
  const out: Results["targets"] = [];
  const vsGraphile = r.ratios["akadze/node-postgres"]?.["graphile-worker"];
  if (vsGraphile) {
    out.push({ name: "akadze/node-postgres processing vs graphile-worker", goal: "≥ 1.50×", measured: `${vsGraphile.processing.toFixed(2)}×`, met: vsGraphile.processing >= 1.5 });
    out.push({ name: "akadze/node-postgres bulk enqueue vs graphile-worker", goal: "≥ 2.00×", measured: `${vsGraphile.enqueue.toFixed(2)}×`, met: vsGraphile.enqueue >= 2 });
  }
  const http100 = r.statementsPerJob.find((s) => s.driver === "neon-http" && s.batchSize === 100);
  if (http100) {
    const measured = Math.max(http100.perJob, http100.httpRequestsPerJob ?? 0);
    out.push({ name: "akadze/neon-http statements per job at batch 100", goal: "≤ 0.05", measured: measured.toFixed(4), met: measured <= 0.05 });
  }
  return out;
}
