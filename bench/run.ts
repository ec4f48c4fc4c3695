// `npm run bench`: akadze on four drivers against graphile-worker and pg-boss, on the same local Postgres,
// each in a fresh database, in one run. Prints tables and writes bench/results.json.
//   npm run bench -- --jobs 20000 --rounds 3 --markdown bench/RESULTS.md
import { execSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import os from "node:os";
import { parseArgs } from "node:util";
import {
  akadzeThroughput, BURN_DOWN, ENQUEUE_CHUNK, idleInvocation, nudgedLatency, statementsPerJob, WORKER_SLOTS, workerLatency, workerThroughput, type Throughput,
} from "./akadze.js";
import { AKADZE_DRIVERS, POOL_SIZE, type AkadzeDriver } from "./akadze-db.js";
import { postgresVersion } from "./databases.js";
import { graphileLatency, graphileSettings, graphileThroughput } from "./graphile.js";
import { pgbossLatency, pgbossSettings, pgbossThroughput } from "./pgboss.js";
import { markdown, printTables } from "./report.js";
import { medianThroughput, ratios, targets, type Machine, type Results } from "./results.js";

const { values: args } = parseArgs({
  options: {
    jobs: { type: "string", default: "20000" },
    rounds: { type: "string", default: "3" },
    latency: { type: "string", default: "200" },
    out: { type: "string", default: "bench/results.json" },
    markdown: { type: "string" },
    drivers: { type: "string", default: AKADZE_DRIVERS.join(",") },
  },
});
const JOBS = positive(args.jobs!, "--jobs");
const ROUNDS = positive(args.rounds!, "--rounds");
const LATENCY_SAMPLES = positive(args.latency!, "--latency");
const WARM_UP_JOBS = 2000;
/** The long-lived worker runs one job per invocation and is slow enough that fewer jobs tell its rate. */
const WORKER_JOBS = Math.min(JOBS, 4000);
const WORKER_ROW = `akadze/node-postgres runWorker (slots ${WORKER_SLOTS})`;
const DRIVERS = args.drivers!.split(",").map((d) => {
  if (!(AKADZE_DRIVERS as readonly string[]).includes(d)) throw new Error(`--drivers: unknown driver ${JSON.stringify(d)} (known: ${AKADZE_DRIVERS.join(", ")})`);
  return d as AkadzeDriver;
});
/** The drivers the per-statement sections compare: HTTP (what the targets are about) and TCP. */
const PAIR = (["neon-http", "node-postgres"] as AkadzeDriver[]).filter((d) => DRIVERS.includes(d));

function positive(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(value)}`);
  return n;
}

function log(message: string): void {
  console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);
}

async function machine(): Promise<Machine> {
  return {
    nproc: Number(execSync("nproc").toString().trim()),
    cpu: os.cpus()[0]?.model ?? "unknown",
    memory: execSync("free -h").toString(),
    node: process.version,
    postgres: await postgresVersion(),
    loadStart: os.loadavg(),
    loadEnd: [],
  };
}

async function main(): Promise<void> {
  const started = performance.now();
  const results: Results = {
    startedAt: new Date().toISOString(), durationS: 0, machine: await machine(),
    settings: {
      command: ["npm run bench", ...(process.argv.length > 2 ? ["--", ...process.argv.slice(2)] : [])].join(" "), jobs: JOBS, rounds: ROUNDS,
      systems: {
        akadze: `${BURN_DOWN.loops} runOnce loops side by side, batchSize ${BURN_DOWN.batchSize}, slots ${BURN_DOWN.slots}, budget Infinity; ` +
          `enqueueMany, ${ENQUEUE_CHUNK} per statement; node-postgres pool ${POOL_SIZE}; neon drivers through the local endpoint (src/dev/neon-endpoint.ts)`,
        [WORKER_ROW]: `runWorker(app, { db, slots: ${WORKER_SLOTS} }) as shipped: one refilling invocation that claims as many jobs as free slots; ${WORKER_JOBS} jobs`,
        "graphile-worker": graphileSettings(),
        "pg-boss": pgbossSettings(),
      },
    },
    throughput: {}, samples: {}, ratios: {}, statementsPerJob: [], latency: [], idle: [], targets: [],
  };
  const record = (name: string, t: Throughput) => {
    (results.samples[name] ??= []).push(t);
    log(`${name}: enqueue ${Math.round(t.enqueuePerSec)}/s, process ${Math.round(t.processPerSec)}/s`);
  };

  // A small unrecorded run of each first, so no system pays for loading its code and warming the JIT.
  log("warm-up");
  for (const driver of DRIVERS) await akadzeThroughput(driver, WARM_UP_JOBS);
  await graphileThroughput(WARM_UP_JOBS);
  await pgbossThroughput(WARM_UP_JOBS);
  // The head-to-head trio is interleaved round by round so machine noise hits all three alike.
  for (let round = 1; round <= ROUNDS; round++) {
    log(`throughput round ${round} of ${ROUNDS}`);
    if (DRIVERS.includes("node-postgres")) record("akadze/node-postgres", await akadzeThroughput("node-postgres", JOBS));
    record("graphile-worker", await graphileThroughput(JOBS));
    record("pg-boss", await pgbossThroughput(JOBS));
  }
  for (const driver of DRIVERS.filter((d) => d !== "node-postgres")) record(`akadze/${driver}`, await akadzeThroughput(driver, JOBS));
  if (DRIVERS.includes("node-postgres")) {
    log(`akadze/node-postgres runWorker burn-down (${WORKER_JOBS} jobs)`);
    record(WORKER_ROW, await workerThroughput("node-postgres", WORKER_JOBS));
  }
  const order = [...AKADZE_DRIVERS.map((d) => `akadze/${d}`), WORKER_ROW, "graphile-worker", "pg-boss"];
  for (const name of order) if (results.samples[name]) results.throughput[name] = medianThroughput(results.samples[name]);
  results.ratios = ratios(results.throughput);

  for (const driver of PAIR) {
    for (const batchSize of [10, 100, 500]) {
      log(`statements per job: ${driver}, batch ${batchSize}`);
      results.statementsPerJob.push({ driver, ...(await statementsPerJob(driver, batchSize, Math.max(2000, batchSize * 10))) });
    }
  }

  for (const driver of [...PAIR].reverse()) {
    log(`latency: akadze/${driver}`);
    results.latency.push({ system: `akadze/${driver}`, ...(await workerLatency(driver, LATENCY_SAMPLES)) });
    results.latency.push({ system: `akadze/${driver}`, ...(await nudgedLatency(driver, LATENCY_SAMPLES)) });
  }
  log("latency: peers");
  results.latency.push({ system: "graphile-worker", ...(await graphileLatency(LATENCY_SAMPLES)) });
  results.latency.push({ system: "pg-boss", ...(await pgbossLatency(LATENCY_SAMPLES)) });

  for (const driver of [...PAIR].reverse()) {
    for (const finished of [0, JOBS]) {
      log(`idle invocation: ${driver}, ${finished} finished jobs`);
      results.idle.push({ driver, ...(await idleInvocation(driver, finished, 50)) });
    }
  }

  results.targets = targets(results);
  results.machine.loadEnd = os.loadavg();
  results.durationS = (performance.now() - started) / 1000;
  printTables(results);
  writeFileSync(args.out!, `${JSON.stringify(results, null, 2)}\n`);
  log(`wrote ${args.out}`);
  if (args.markdown) {
    writeFileSync(args.markdown, markdown(results));
    log(`wrote ${args.markdown}`);
  }
}

main().then(() => process.exit(0), (error) => {
  console.error(error);
  process.exit(1);
});
