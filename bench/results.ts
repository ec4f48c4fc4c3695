// The shape of bench/results.json, and the ratios and targets derived from the measurements.
import type { WorkflowBench } from "./workflows.js";
import type { ProgressLoopRow } from "./progress.js";
import type { TracingThroughput } from "./tracing.js";
import type { FairnessMedians } from "./fairness.js";
import type { FairCostRow } from "./fair-claim-cost.js";
import type { StatementsPerJob, Throughput } from "./akadze.js";
import type { AkadzeDriver } from "./akadze-db.js";
import type { CronTick } from "./akadze-worker.js";
import type { BenchConfig } from "./config.js";
import type { Latency } from "./latency.js";
import type { ClaimCost, ScaleOutMedians } from "./scale-out.js";
import type { FanOutRow } from "./fan-out.js";
import { median, pct } from "./stats.js";
import type { CpuPerJob } from "./pg-cpu.js";
import type { SweepEntry } from "./sweep.js";

export interface Machine { nproc: number; cpu: string; memory: string; node: string; postgres: string; loadStart: number[]; loadEnd: number[] }

/** The names the burn-down table and its ratios use for the peers. */
export const PEERS = ["graphile-worker", "pg-boss", "raw-SQL floor"] as const;

export interface WorkerComparison {
  jobs: number;
  /** Medians of `rounds` interleaved rounds (each round alternates which system runs first). */
  rounds: number;
  akadze: Throughput;
  graphile: Throughput;
  samples: { akadze: number[]; graphile: number[] };
  akadzeSettings: string;
  graphileSettings: string;
  ratio: number;
  /** `--baseline`: the earlier akadze's runWorker in the same rounds. */
  baseline?: { name: string; throughput: Throughput; samples: number[] };
}

/** The burn-down of `jobs` due jobs beside `delayed` jobs due in a day, per system (medians of interleaved rounds). */
export interface DelayedBacklog {
  jobs: number;
  delayed: number;
  rounds: number;
  rows: { system: string; settings: string; throughput: Throughput; samples: number[] }[];
}

export interface Results {
  startedAt: string;
  durationS: number;
  machine: Machine;
  settings: { command: string; config: BenchConfig; systems: Record<string, string> };
  /** Every configuration each system's sweep tried; `chosen` marks the head-to-head ones. */
  sweeps: (SweepEntry & { chosen: boolean })[];
  /** Median over rounds, per system ("akadze/<driver>", "graphile-worker", "pg-boss", "raw-SQL floor"). */
  throughput: Record<string, Throughput>;
  /** Every round's sample, for the record. */
  samples: Record<string, Throughput[]>;
  /** akadze system -> peer -> akadze rate / peer rate. */
  ratios: Record<string, Record<string, { enqueue: number; processing: number; firstDrain: number | null }>>;
  worker: WorkerComparison | null;
  statementsPerJob: (StatementsPerJob & { driver: AkadzeDriver })[];
  latency: (Latency & { system: string })[];
  tick: CronTick | null;
  scaleOut: ScaleOutMedians[];
  claimCost: ClaimCost[];
  fanOut: FanOutRow[];
  /** Issue 27's fairness (bench/fairness.ts): each mode's medians over its bursts. */
  fairness: FairnessMedians[];
  fairClaimCost: FairCostRow[];
  /** Workflows of 5 no-op steps (bench/workflows.ts). */
  workflows: WorkflowBench[];
  /** Statements a body's 10,000 progress() calls cost (bench/progress.ts). */
  progress: ProgressLoopRow[];
  /** Burn-down with tracing off and on (bench/tracing.ts); absent from runs made before it. */
  tracing?: TracingThroughput[];
  /** The burn-down beside jobs delayed by a day (the "delayed" section); absent from runs made before it. */
  delayed?: DelayedBacklog;
  targets: { name: string; goal: string; measured: string; met: boolean }[];
}

/** The median sample of each system (rates taken independently). */
export function medianThroughput(samples: Throughput[]): Throughput {
  return {
    enqueuePerSec: median(samples.map((s) => s.enqueuePerSec)),
    processPerSec: median(samples.map((s) => s.processPerSec)),
    enqueueMs: median(samples.map((s) => s.enqueueMs)),
    processMs: median(samples.map((s) => s.processMs)),
    transactionsPerJob: samples[0].transactionsPerJob === null ? null : median(samples.map((s) => s.transactionsPerJob ?? NaN)),
    firstDrainPerSec: samples[0].firstDrainPerSec === null ? null : median(samples.map((s) => s.firstDrainPerSec ?? NaN)),
    cpu: medianCpu(samples.map((s) => s.cpu)),
  };
}

/** The median of each side's CPU per job (independently), or null if a sample did not measure it. */
function medianCpu(samples: (CpuPerJob | null)[]): CpuPerJob | null {
  if (samples.some((c) => c === null)) return null;
  const postgres = samples.map((c) => c!.postgresUs);
  return {
    nodeUs: median(samples.map((c) => c!.nodeUs)),
    postgresUs: postgres.some((p) => p === null) ? null : median(postgres as number[]),
  };
}

export function ratios(throughput: Record<string, Throughput>): Results["ratios"] {
  const out: Results["ratios"] = {};
  for (const [name, t] of Object.entries(throughput)) {
    if (!/^akadze[/@]/.test(name)) continue;
    out[name] = {};
    for (const peer of PEERS) {
      const p = throughput[peer];
      if (p) {
        out[name][peer] = {
          enqueue: t.enqueuePerSec / p.enqueuePerSec, processing: t.processPerSec / p.processPerSec,
          firstDrain: t.firstDrainPerSec !== null && p.firstDrainPerSec !== null ? t.firstDrainPerSec / p.firstDrainPerSec : null,
        };
      }
    }
  }
  return out;
}

/** The worker comparison's ratio on the first burn-down of each database (null where not measured). */
export function firstDrainRatio(w: WorkerComparison): number | null {
  return w.akadze.firstDrainPerSec !== null && w.graphile.firstDrainPerSec !== null ? w.akadze.firstDrainPerSec / w.graphile.firstDrainPerSec : null;
}

type Target = Results["targets"][number];
const times = (n: number) => `${n.toFixed(2)}×`;

/** The issues' targets (10 and 16), checked against this run; a missing measurement adds no row. */
export function targets(r: Omit<Results, "targets">): Target[] {
  const out: Target[] = [];
  const vsGraphile = r.ratios["akadze/node-postgres"]?.["graphile-worker"];
  if (vsGraphile) {
    out.push({ name: "burn-down: runOnce loops vs graphile-worker (best of its sweep)", goal: "≥ 1.50×", measured: times(vsGraphile.processing), met: vsGraphile.processing >= 1.5 });
    if (vsGraphile.firstDrain !== null) {
      out.push({ name: "the same, first burn-down of a fresh database", goal: "≥ 1.50×", measured: times(vsGraphile.firstDrain), met: vsGraphile.firstDrain >= 1.5 });
    }
    out.push({ name: "bulk enqueue vs graphile-worker add_jobs()", goal: "≥ 2.00×", measured: times(vsGraphile.enqueue), met: vsGraphile.enqueue >= 2 });
  }
  if (r.worker) {
    out.push({ name: "runWorker vs graphile-worker, both at concurrency 10", goal: "≥ 1.50×", measured: times(r.worker.ratio), met: r.worker.ratio >= 1.5 });
    const first = firstDrainRatio(r.worker);
    if (first !== null) {
      out.push({ name: "the same, first burn-down of a fresh database", goal: "≥ 1.50×", measured: times(first), met: first >= 1.5 });
    }
  }
  const akadzeLatency = r.latency.find((l) => l.system === "akadze/node-postgres" && l.how.startsWith("runWorker"));
  const graphileLatency = r.latency.find((l) => l.system === "graphile-worker");
  if (akadzeLatency && graphileLatency) {
    const gap = akadzeLatency.p50 - graphileLatency.p50;
    out.push({ name: "idle runWorker enqueue-to-start p50 minus graphile-worker's", goal: "≤ 2 ms", measured: `${gap.toFixed(1)} ms`, met: gap <= 2 });
    // Issue 38's wake-up: an idle worker starts a job as soon as graphile-worker does.
    out.push({ name: "idle runWorker enqueue-to-start p50 vs graphile-worker's", goal: "≤ graphile-worker's", measured: `${akadzeLatency.p50.toFixed(1)} vs ${graphileLatency.p50.toFixed(1)} ms`, met: akadzeLatency.p50 <= graphileLatency.p50 });
    out.push({ name: "idle runWorker first job after idle (median) vs graphile-worker's", goal: "≤ graphile-worker's", measured: `${akadzeLatency.firstAfterIdle.toFixed(1)} vs ${graphileLatency.firstAfterIdle.toFixed(1)} ms`, met: akadzeLatency.firstAfterIdle <= graphileLatency.firstAfterIdle });
  }
  if (r.tick) {
    const budget = r.tick.budgetMs;
    const share = r.tick.summary.durationMs / budget;
    out.push({ name: `cron invocation (budget ${r.tick.budget}) works its budget`, goal: "90-110 % of budget", measured: `${(share * 100).toFixed(0)} %, ${r.tick.summary.succeeded} jobs`, met: share >= 0.9 && share <= 1.1 });
    out.push({ name: "cron invocation leaves nothing running", goal: "0", measured: String(r.tick.leftRunning), met: r.tick.leftRunning === 0 });
  }
  const http100 = r.statementsPerJob.find((s) => s.driver === "neon-http" && s.batchSize === 100);
  if (http100) {
    const measured = Math.max(http100.perJob, http100.httpRequestsPerJob ?? 0);
    out.push({ name: "neon-http statements per job at batch 100", goal: "≤ 0.05", measured: measured.toFixed(4), met: measured <= 0.05 });
  }
  // A median over runs (bursts, rounds), and the runs' range where there were several.
  const spread = (each: number[], runs: string, show = (x: number) => x.toFixed(2)) =>
    each.length < 2 ? "" : `, median of ${each.length} ${runs}: ${show(Math.min(...each))}-${show(Math.max(...each))}`;
  const k = (n: number) => r.scaleOut.find((s) => s.driver === "node-postgres" && s.k === n);
  const k16 = k(16);
  const k32 = k(32);
  if (k16) out.push({ name: "scale-out K=16: share of slots busy", goal: "≥ 60 %", measured: `${pct(k16.slotsBusy)}${spread(k16.slotsBusyEach, "rounds", pct)}`, met: k16.slotsBusy >= 0.6 });
  const width = (n: number) => r.fanOut.find((f) => f.width === n);
  const one = width(1);
  for (const f of r.fanOut.filter((x) => x.width > 1)) {
    if (one) {
      const ratio = f.jobsPerMinute / one.jobsPerMinute;
      out.push({ name: `fan-out ${f.width}: jobs drained per minute vs fan-out 1`, goal: `≥ ${(0.6 * f.width).toFixed(1)}× (60 % of linear)`, measured: times(ratio), met: ratio >= 0.6 * f.width });
      if (f.pgCpuPerJobMs !== null && one.pgCpuPerJobMs !== null) {
        const cpu = f.pgCpuPerJobMs / one.pgCpuPerJobMs;
        out.push({ name: `fan-out ${f.width}: Postgres CPU per job vs fan-out 1`, goal: "≤ 2.00×", measured: times(cpu), met: cpu <= 2 });
      }
    }
    out.push({ name: `fan-out ${f.width}: most invocations live at once`, goal: `≤ ${f.width}`, measured: String(f.peakLive), met: f.peakLive <= f.width });
  }
  const fair = r.fairness?.find((x) => x.mode === "fair");
  const plain = r.fairness?.find((x) => x.mode === "plain");
  if (fair) {
    out.push({ name: "fairness: claims per invocation until the small tenants' last job started", goal: "≤ 2", measured: `${fair.claimsPerInvocation.toFixed(2)}${spread(fair.claimsPerInvocationEach, "bursts")} (plain order: ${plain ? plain.claimsPerInvocation.toFixed(1) : "—"})`, met: fair.claimsPerInvocation <= 2 });
    out.push({ name: "fairness: small tenants' p95 wait in median claim cycles", goal: "< 2", measured: `${fair.p95InCycles.toFixed(2)}${spread(fair.p95InCyclesEach, "bursts")} (plain order: ${plain ? plain.p95InCycles.toFixed(1) : "—"})`, met: fair.p95InCycles < 2 });
  }
  for (const f of r.fairClaimCost ?? []) {
    const beside = (f.delayed > 0 ? `, beside ${f.delayed.toLocaleString("en-US")} delayed jobs of other keys` : "")
      + ((f.unkeyed ?? 0) > 0 ? `, beside ${f.unkeyed.toLocaleString("en-US")} due jobs without a key` : "");
    out.push({ name: `a fair claim vs a plain one of the same batch, ${f.keys.toLocaleString("en-US")} keys, ${f.layout}${beside} (planning + execution)`, goal: "≤ 1.30×", measured: times(f.serverRatio), met: f.serverRatio <= 1.3 });
  }
  if (k16 && k32) out.push({ name: "scale-out jobs/s from K=16 to K=32", goal: "non-decreasing", measured: `${Math.round(k16.jobsPerSec)} → ${Math.round(k32.jobsPerSec)}`, met: k32.jobsPerSec >= k16.jobsPerSec });
  return out;
}
