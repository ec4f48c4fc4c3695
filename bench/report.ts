// Turns the results into tables: boxed for the terminal, pipe tables for bench/RESULTS.md.
import Table from "cli-table3";
import { firstDrainRatio, PEERS, type Results } from "./results.js";
import { pct } from "./stats.js";
import type { Throughput } from "./akadze.js";
import { WORKER_SLOTS } from "./akadze-worker.js";
import { WARM_UP_ROUNDS } from "./fairness.js";

export interface Section { title: string; head: string[]; rows: string[][]; notes?: string[] }

const fmt = (n: number | null | undefined, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n) ? "—" : n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ratio = (n: number | undefined) => (n !== undefined && Number.isFinite(n) ? `${n.toFixed(2)}×` : "—");

function throughputSections(r: Results): Section[] {
  const peers = PEERS.filter((p) => r.throughput[p]);
  const out: Section[] = [
    {
      title: "Sweeps: each system's configurations on the same burn-down, the second of two in the sweep's database (the chosen one is marked)",
      head: ["system", "configuration", "jobs", "process jobs/s", "chosen"],
      rows: r.sweeps.map((s) => [s.system, s.settings, fmt(s.jobs), s.error ? `did not run: ${s.error}` : fmt(s.processPerSec), s.chosen ? "✓" : ""]),
    },
    {
      title: `Burn-down: ${fmt(r.settings.config.jobs)} no-op jobs, bulk enqueue then burn-down (median of ${r.settings.config.rounds} interleaved round(s) where repeated)`,
      head: ["system", "enqueue jobs/s", "process jobs/s", "Postgres transactions/job", ...peers.map((p) => `process vs ${p}`), "enqueue vs graphile-worker",
        "first burn-down, fresh database: process jobs/s", "the same vs graphile-worker"],
      rows: Object.entries(r.throughput).map(([name, t]) => [
        name, fmt(t.enqueuePerSec), fmt(t.processPerSec), fmt(t.transactionsPerJob, 3),
        ...peers.map((p) => (r.ratios[name] ? ratio(r.ratios[name][p]?.processing) : "")),
        r.ratios[name] ? ratio(r.ratios[name]["graphile-worker"]?.enqueue) : "",
        fmt(t.firstDrainPerSec), r.ratios[name] ? ratio(r.ratios[name]["graphile-worker"]?.firstDrain ?? undefined) : "",
      ]),
      notes: [
        `Each measurement enqueues and burns down ${fmt(r.settings.config.jobs)} jobs twice in a fresh database of its own: the figures are the second burn-down's, ` +
          "the first is reported beside them (every system's connections, caches and planner statistics cold; akadze's first claims plan on the statistics its migration gave the empty table, too recent for the claims' own ANALYZE).",
        ...Object.entries(r.settings.systems).map(([name, s]) => `${name}: ${s}`),
        ...Object.keys(r.throughput).filter((name) => name.startsWith("akadze@") && r.throughput["akadze/node-postgres"]).map((name) =>
          `akadze/node-postgres against ${name} in the same rounds: ${ratio(r.throughput["akadze/node-postgres"].processPerSec / r.throughput[name].processPerSec)} ` +
          `(first burn-down ${ratio((r.throughput["akadze/node-postgres"].firstDrainPerSec ?? NaN) / (r.throughput[name].firstDrainPerSec ?? NaN))})`),
      ],
    },
  ];
  const ceiling = ceilingSection(r);
  if (ceiling) out.push(ceiling);
  const delayed = delayedSection(r);
  if (delayed) out.push(delayed);
  const cpu = cpuSection(r);
  if (cpu) out.push(cpu);
  if (r.worker) {
    const w = r.worker;
    out.push({
      title: `Long-lived workers at concurrency 10: ${fmt(w.jobs)} no-op jobs (median of ${w.rounds} interleaved round(s))`,
      head: ["system", "process jobs/s", "ratio", "first burn-down, fresh database: process jobs/s", "the same, ratio"],
      rows: [
        ["akadze runWorker", fmt(w.akadze.processPerSec), ratio(w.ratio), fmt(w.akadze.firstDrainPerSec), ratio(firstDrainRatio(w) ?? undefined)],
        ["graphile-worker", fmt(w.graphile.processPerSec), "", fmt(w.graphile.firstDrainPerSec), ""],
        ...(w.baseline ? [[`${w.baseline.name} runWorker`, fmt(w.baseline.throughput.processPerSec), ratio(w.baseline.throughput.processPerSec / w.graphile.processPerSec),
          fmt(w.baseline.throughput.firstDrainPerSec), ""]] : []),
      ],
      notes: [`akadze: ${w.akadzeSettings}`, `graphile-worker: ${w.graphileSettings} (the fastest concurrency-10 entry of its sweep)`,
        "each round starts a worker on a fresh database twice, a burn-down each: the figures are the second's, the first is beside them",
        `every round, jobs/s: akadze ${w.samples.akadze.map((n) => fmt(n)).join(", ")}; graphile-worker ${w.samples.graphile.map((n) => fmt(n)).join(", ")}` +
          (w.baseline ? `; ${w.baseline.name} ${w.baseline.samples.map((n) => fmt(n)).join(", ")} (this checkout ${ratio(w.akadze.processPerSec / w.baseline.throughput.processPerSec)} of it)` : "")],
    });
  }
  return out;
}

/** The burn-down beside jobs delayed by a day, against the same burn-down without them where it ran too. */
function delayedSection(r: Results): Section | null {
  const d = r.delayed;
  if (!d) return null;
  const graphile = d.rows.find((x) => x.system === "graphile-worker")?.throughput;
  return {
    title: `Burn-down beside a delayed backlog: ${fmt(d.jobs)} due no-op jobs beside ${fmt(d.delayed)} due in a day (median of ${d.rounds} interleaved round(s))`,
    head: ["system", "process jobs/s", "vs graphile-worker", "first burn-down, fresh database: process jobs/s", "the same, vs graphile-worker", "the burn-down without the delayed jobs (above)"],
    rows: d.rows.map((x) => [x.system, fmt(x.throughput.processPerSec), x.system === "graphile-worker" || !graphile ? "" : ratio(x.throughput.processPerSec / graphile.processPerSec),
      fmt(x.throughput.firstDrainPerSec), x.system === "graphile-worker" || !graphile?.firstDrainPerSec ? "" : ratio((x.throughput.firstDrainPerSec ?? 0) / graphile.firstDrainPerSec),
      r.throughput[x.system] ? fmt(r.throughput[x.system].processPerSec) : ""]),
    notes: [
      ...d.rows.map((x) => `${x.system}: ${x.settings}; every round, jobs/s: ${x.samples.map((n) => fmt(n)).join(", ")}`),
      "The delayed jobs are enqueued first and the table analyzed (as autovacuum would), then the due ones are enqueued and burned down twice, as in the burn-down above; the delayed jobs stay queued throughout.",
    ],
  };
}

/**
 * What the row work alone allows: each floor on akadze's own table (the same row operations per job, no engine)
 * against graphile-worker, and the share of that floor the ≥ 1.5× goal asks of akadze beside the share it reaches.
 */
function ceilingSection(r: Results): Section | null {
  const graphile = r.throughput["graphile-worker"]?.processPerSec;
  if (!graphile) return null;
  const pairs: [string, string][] = [["akadze/node-postgres", "history"], ["akadze/node-postgres, keepSucceeded: false", "delete"]];
  const rows = pairs.flatMap(([system, kind]) => {
    const akadze = r.throughput[system]?.processPerSec;
    if (!akadze) return [];
    // The floor at the claim size, and at the burn-down's where it was measured too.
    const prefix = `floor on akadze's table: ${kind}`;
    return Object.entries(r.throughput).filter(([name]) => name === prefix || name.startsWith(`${prefix}, batch `)).map(([name, t]) => {
      const floor = t.processPerSec;
      return [system, `${name.slice("floor on akadze's table: ".length)}: ${fmt(floor)}`, ratio(floor / graphile), pct((1.5 * graphile) / floor), pct(akadze / floor)];
    });
  });
  return rows.length === 0 ? null : {
    title: "What the row work alone allows: akadze's floors against graphile-worker",
    head: ["system", "its floor on akadze's table, jobs/s", "floor vs graphile-worker", "share of the floor 1.5× graphile-worker needs", "share of the floor reached"],
    rows,
    notes: ["A floor does the row operations akadze's mode needs per job (the claim's update, then the delete, with or without the history row) in the plainest statements, from clients that do nothing else: what an engine doing that work could reach."],
  };
}

/**
 * What each system's jobs cost the machine's CPU (this Node process and the database's backends), and so the
 * most any overlap of the two could reach on this machine's cores, beside what the goal needs.
 */
function cpuSection(r: Results): Section | null {
  const cores = r.machine.nproc;
  const entries: [string, Throughput][] = Object.entries(r.throughput);
  if (r.worker) entries.push([`akadze runWorker, concurrency ${WORKER_SLOTS}`, r.worker.akadze], [`graphile-worker, concurrency ${WORKER_SLOTS}`, r.worker.graphile]);
  const measured = entries.filter(([, t]) => t.cpu);
  if (measured.length === 0) return null;
  const total = (t: Throughput) => (t.cpu!.postgresUs === null ? null : t.cpu!.nodeUs + t.cpu!.postgresUs);
  const rows = measured.map(([name, t]) => {
    const us = total(t);
    return [name, fmt(t.processPerSec), fmt(t.cpu!.nodeUs, 1), fmt(t.cpu!.postgresUs, 1), fmt(us, 1),
      us === null ? "—" : fmt((cores * 1e6) / us), us === null ? "—" : pct((t.processPerSec * us) / (cores * 1e6))];
  });
  const needs = (label: string, peer: Throughput | undefined, ours: Throughput | undefined) => {
    const us = ours && total(ours);
    if (!peer || !us) return [];
    const budget = (cores * 1e6) / (1.5 * peer.processPerSec);
    return [`${label}: 1.5× graphile-worker is ${fmt(1.5 * peer.processPerSec)} jobs/s, which allows ${fmt(budget, 1)} µs of CPU per job with all ${cores} cores busy all the time; akadze spends ${fmt(us, 1)}.`];
  };
  return {
    title: "CPU per job: this process and the database's backends, during the recorded burn-down",
    head: ["system", "process jobs/s", "Node µs/job", "Postgres µs/job", "total µs/job", `every one of ${cores} cores busy: jobs/s`, "share of the cores used"],
    rows,
    notes: [
      "Node: process.cpuUsage() of the bench process over the burn-down (the engine or the peer's runner and its driver; for the neon drivers the local endpoint too, for PGlite the database itself). " +
        "Postgres: user and system CPU of the database's backends from /proc (background processes such as the WAL writer not included).",
      ...needs("Burn-down", r.throughput["graphile-worker"], r.throughput["akadze/node-postgres"]),
      ...needs(`runWorker at concurrency ${WORKER_SLOTS}`, r.worker?.graphile, r.worker?.akadze),
    ],
  };
}

function engineSections(r: Results): Section[] {
  const lat = r.settings.config.latency;
  const out: Section[] = [
    {
      title: `Enqueue-to-start latency (ms): ${lat.warmUp} uncounted jobs, then ${lat.idles} times: idle ${fmt(lat.idleMs)} ms, then ${Math.ceil(lat.samples / lat.idles)} jobs one at a time, each after the previous started plus ${lat.gapMs[0]}-${lat.gapMs[1]} ms`,
      head: ["system", "how", `first after idle (median of ${lat.idles})`, "each first after idle", "p50", "p95", "max", "samples"],
      rows: r.latency.map((l) => [l.system, l.how, fmt(l.firstAfterIdle, 1), l.firstsAfterIdle.map((x) => x.toFixed(1)).join(", "), fmt(l.p50, 1), fmt(l.p95, 1), fmt(l.max, 1), String(l.samples)]),
      notes: ["akadze's worker over node-postgres, graphile-worker and pg-boss run at once, each in a database of its own, started and warmed up first, and take turns: after each idle period their first jobs come one after the other (the order rotating each period), then each meets its next job the gap after its last one started, the others' jobs in between; so a drift in the machine's load weighs on each alike. The worker over neon-http (no LISTEN: it polls) and the nudged invocation (no idle wait: its first after idle is the first of each ten) are measured alone, after them."],
    },
  ];
  if (r.tick) {
    const t = r.tick;
    out.push({
      title: `One cron invocation: runOnce(app, { db, budget: ${JSON.stringify(t.budget)} }), other options default, over ${fmt(t.backlog)} queued ${t.jobMs} ms jobs (node-postgres)`,
      head: ["jobs per tick", "claimed", "released", "statements", "ran for (ms)", "of budget", "slots busy", "left running"],
      rows: [[fmt(t.summary.succeeded), fmt(t.summary.claimed), fmt(t.summary.released), fmt(t.summary.roundTrips), fmt(t.summary.durationMs),
        pct(t.summary.durationMs / t.budgetMs), pct(t.slotsBusy), String(t.leftRunning)]],
    });
  }
  out.push({
    title: "Statements per job (akadze: enqueue in chunks of 1,000, then one runOnce loop until a claim comes back empty)",
    head: ["driver", "batch size", "jobs", "runOnce statements", "enqueue statements", "statements/job", "HTTP requests/job"],
    rows: r.statementsPerJob.map((s) => [s.driver, String(s.batchSize), fmt(s.jobs), fmt(s.processing), fmt(s.enqueue), fmt(s.perJob, 4), fmt(s.httpRequestsPerJob, 4)]),
  });
  if (r.progress?.length) {
    out.push({
      title: "job.progress(): statements of one job's run whose body calls it 10,000 times, against the same run reporting nothing",
      head: ["driver", "loop", "calls", "run statements (quiet)", "run statements (reporting)", "progress statements", "body ms"],
      rows: r.progress.map((p) => [p.driver, p.loop, fmt(p.calls), fmt(p.baseline), fmt(p.reporting), fmt(p.progressStatements), fmt(p.bodyMs)]),
      notes: ["tight: no await between calls; awaiting: a setImmediate between calls. Writes are coalesced: one in flight per run, at most one every 250 ms, the last before the outcome"],
    });
  }
  if (r.workflows?.length) {
    out.push({
      title: "Workflows: N workflows x 5 no-op steps, runOnce loops (batch 50, slots 10) until a claim comes back empty",
      head: ["driver", "shape", "workflows", "steps", "steps/s", "statements/step", "invocations"],
      rows: r.workflows.map((w) => [w.driver, w.shape, fmt(w.workflows), String(w.steps), fmt(w.stepsPerSec), fmt(w.statementsPerStep, 3), fmt(w.invocations)]),
      notes: ["statements: counted by the driver (node-postgres) or as HTTP requests at the local Neon endpoint (neon-http); enqueue, claims, step loads, step results and settles included"],
    });
  }
  if (r.tracing?.length) {
    out.push({
      title: "Tracing: burn-down of no-op jobs (one runOnce loop, batch 500, slots 50), enqueued under a span; the modes alternate, median round",
      head: ["driver", "tracing", "jobs", "rounds", "jobs/s", "spans recorded"],
      rows: r.tracing.map((t) => [t.driver, t.mode, fmt(t.jobs), String(t.rounds), fmt(t.processPerSec), t.spans === null ? "-" : fmt(t.spans)]),
      notes: ["on, no SDK: createApp({ tracing: openTelemetry() }) with no SDK registered (non-recording spans); on, recording: an SDK with a batch span processor whose exporter drops the spans"],
    });
  }
  return out;
}

function scaleSections(r: Results): Section[] {
  const s = r.settings.config.scaleOut;
  return [
    {
      title: `Scale-out: K concurrent runOnce loops (slots 8, batch 16, default budget) over ${s.jobMs} ms I/O jobs, ${s.jobsPerSlot} jobs per slot (medians of ${r.settings.config.rounds} interleaved round(s))`,
      head: ["driver", "K", "jobs", "jobs/s", "share of K×8 slots busy", "the same, each round", "invocations", "statements", "claims", "Postgres CPU ms", "CPU ms/claim", "CPU ms/job"],
      rows: r.scaleOut.map((x) => [x.driver, String(x.k), fmt(x.jobs), fmt(x.jobsPerSec), pct(x.slotsBusy), x.slotsBusyEach.map(pct).join(", "), fmt(x.invocations), fmt(x.statements),
        fmt(x.claims), fmt(x.pgCpuMs), fmt(x.pgCpuPerClaimMs, 2), fmt(x.pgCpuPerJobMs, 3)]),
      notes: [
        "Each round runs every row once, in order, each in a fresh database; every column but \"each round\" is the median of the rounds' figures.",
        "Postgres CPU: utime+stime from /proc of the backends connected to the run's database, before and after (pg_stat_statements is not preloaded on this server).",
        "claims: claim statements (the ones with the claim's lease of its batch) sent by the node-postgres pool or in neon-http request bodies; the local endpoint serves neon-http with a pool of 10 connections.",
      ],
    },
    {
      title: "What a claim costs Postgres (node-postgres, one connection, runOnce with slots 8, batch 16)",
      head: ["claim", "calls", "wall ms/call (median)", "statements/call", "claims/call", "CPU ms/call", "CPU ms/claim", "EXPLAIN planning ms", "EXPLAIN execution ms", "jobs claimed by the EXPLAIN"],
      rows: r.claimCost.map((c) => [c.shape, c.calls ? fmt(c.calls) : "—", fmt(c.wallMs, 2), fmt(c.statementsPerCall, 2), fmt(c.claimsPerCall, 2),
        fmt(c.pgCpuPerCallMs, 2), fmt(c.pgCpuPerClaimMs, 2), fmt(c.planningMs, 2), fmt(c.executionMs, 2), fmt(c.explainedRows)]),
      notes: [
        "CPU ms from /proc (10 ms ticks, summed over all calls). A call's CPU includes its completions: the claim alone is the idle row, or the EXPLAIN columns.",
        "EXPLAIN (ANALYZE) reruns the first claim a call sent, in a rolled-back transaction, on 16 due jobs for the 16-job row; medians.",
      ],
    },
  ];
}

function fanOutSections(r: Results): Section[] {
  const f = r.settings.config.fanOut;
  if (!f) return [];
  return [{
    title: `Fan-out: one cron schedule over neon-http (local endpoint), ${f.windowMs / 1000} s after its tick; ${f.jobMs} ms jobs, slots ${f.slots}, batch ${f.batchSize}, budget ${f.budget}`,
    head: ["maxInvocations", "jobs drained", "jobs/minute", "invocations", "most live at once", "budgets", "statements", "Postgres CPU ms", "CPU ms/job"],
    rows: (r.fanOut ?? []).map((x) => [x.width === 0 ? "none (one invocation per tick)" : x.pgCpuPerJobEach ? `${x.width} (median of ${x.pgCpuPerJobEach.length} windows)` : String(x.width), fmt(x.drained), fmt(x.jobsPerMinute), fmt(x.invocations),
      fmt(x.peakLive), fmt(x.budgets), fmt(x.statements), fmt(x.pgCpuMs), fmt(x.pgCpuPerJobMs, 3)]),
    notes: [
      "Siblings and successors run in the bench's process (fan-out's plain invoke()), all on the one local Neon endpoint (a pool of 10 connections) and this machine's cores.",
      "The chain is stopped when the window ends (runOnce's signal); jobs count if their body ended inside it. Invocations, statements and Postgres CPU (from /proc, as for the scale-out) count the whole chain, its end after the window included.",
      ...(r.fanOut ?? []).flatMap(({ width, pgCpuPerJobEach: each }) => each ? [`Fan-out ${width}, the baseline of the ratios: every column the median of ${each.length} windows (the widths' windows in order, then this one's again); CPU ms/job of each window: ${each.map((c) => fmt(c, 3)).join(", ")}.`] : []),
    ],
  }];
}

function fairnessSections(r: Results): Section[] {
  const f = r.settings.config.fairness;
  if (!f) return [];
  return [{
    title: `Fairness: one tenant's ${f.bigJobs.toLocaleString("en-US")} queued jobs beside ${f.smallKeys} tenants of ${f.smallJobsPerKey}; ${f.invocations} concurrent runOnce loops, one claim of ${f.batchSize} per call (node-postgres, no-op jobs; medians of ${r.fairness?.[0]?.p95InCyclesEach.length ?? 1} burst(s) of each, interleaved)`,
    head: ["claim order", "small tenants' jobs", "wait p50 ms", "wait p95 ms", "claim cycle ms (median)", "p95 wait in claim cycles", "the same, each burst", "big tenant's jobs started first",
      "claims per invocation until the last small job", "the same, each burst"],
    rows: (r.fairness ?? []).map((x) => [x.mode === "fair" ? "fair (each tenant its fairKey)" : "plain (no keys)", fmt(x.smallJobs), fmt(x.smallWaitP50Ms), fmt(x.smallWaitP95Ms),
      fmt(x.claimCycleMs, 1), fmt(x.p95InCycles, 2), x.p95InCyclesEach.map((v) => fmt(v, 2)).join(", "), fmt(x.bigStartedBefore), fmt(x.claimsPerInvocation, 2),
      x.claimsPerInvocationEach.map((v) => fmt(v, 2)).join(", ")]),
    notes: [
      "Each burst is measured in a fresh database of its own; every column but the two \"each burst\" ones is the median of the bursts' figures.",
      "Wait: from the moment every job is queued to its handler's start. A claim cycle is one runOnce call: its claim, its starts and its settle (median over the whole drain).",
      "Claims per invocation: the claims sent when the small tenants' last job started, divided by the invocations (that claim itself included).",
      `Before the burst is queued, ${WARM_UP_ROUNDS} rounds of the loops' own calls over a few jobs of a warm-up tenant (they check the schema, learn that keyed jobs exist, open the connections the loops use and prepare on them the claims the loops send), and before the clock starts an ANALYZE of the jobs table (the statistics of a table in use): the p95 wait then counts the claim order and the first round's claims, sent by all the loops at once, not the start-up.`,
    ],
  }, {
    title: `A fair claim's cost (by turns): ${f.costKeys.map((k) => k.toLocaleString("en-US")).join(" and ")} keys sharing ${f.costJobs.toLocaleString("en-US")} queued jobs, one claim of ${f.batchSize} (medians of ${f.costRuns} runs of each, alternating, rolled back)`,
    head: ["layout", "keys", "jobs queued", "delayed jobs beside", "due jobs without a key beside", "plain: planning + execution ms", "fair: planning + execution ms", "fair ÷ plain, execution", "fair ÷ plain, planning + execution",
      "fair ÷ plain, prepared (as over node-postgres)", "fair ÷ plain, unprepared (as over neon-http)", "fairness index scans", "keys served: plain / fair"],
    rows: (r.fairClaimCost ?? []).map((x) => [x.layout, fmt(x.keys), fmt(x.queued), fmt(x.delayed), fmt(x.unkeyed ?? 0), fmt(x.plainPlanningMs + x.plainExecutionMs, 2), fmt(x.fairPlanningMs + x.fairExecutionMs, 2),
      `${fmt(x.executionRatio, 2)}×`, `${fmt(x.serverRatio, 2)}×`, `${fmt(x.preparedRatio, 2)}×`, `${fmt(x.unpreparedRatio, 2)}×`, fmt(x.fairIndexProbes), `${fmt(x.plainKeys)} / ${fmt(x.fairKeys)}`]),
    notes: [
      "Both claims are captured as the runtime sends them, a later claim of an invocation (the first claim's riders weigh on neither; the fair one by turns, as a process that has met no sub-keys sends it), and run on the same rows, the fair one where each is a keyed job with its turn as one enqueue of them all gives it, the plain one in another database where they have no key (a plain claim reads no keyed job with a turn): EXPLAIN (ANALYZE, TIMING OFF) for the server's planning and execution, then the statement's wall time on one connection as a named prepared statement and unprepared.",
      "Layout: mixed, the keys' jobs inserted side by side (their next jobs share pages, as the plain claim's do); bursts, each key's jobs inserted together (a key's next job on a page of its own, a fair claim's worst case).",
      "Fairness index scans: the loops of every index scan of jobs_fair_idx, jobs_tag_idx, jobs_key_tag_idx and jobs_parked_idx in the fair plan (the turns read in order, the parked jobs come due, the claim's question whether keyed jobs exist).",
      `Delayed jobs beside: ${f.costDelayed.keys.toLocaleString("en-US")} more keys of ${f.costDelayed.perKey.toLocaleString("en-US")} jobs each, all due a day and more later (a second apart), each named to sort right after the due key of its number (those past the due keys' count after the last one), parked as an enqueue for later leaves them: neither claim reads them.`,
      `Due jobs without a key beside: ${(f.costUnkeyed ?? 0).toLocaleString("en-US")} of them, due before the keyed ones, in both databases. A fair claim carries its plain scan only while such a job is due (each fair claim asks); in the other rows none is, and the fair claim goes without it.`,
    ],
  }];
}

/** The sections every rendering shows, in order. */
export function sections(r: Results): Section[] {
  return [
    ...throughputSections(r), ...engineSections(r), ...scaleSections(r), ...fanOutSections(r), ...fairnessSections(r),
    { title: "Targets (issues 10, 16, 24, 27 and 38)", head: ["target", "goal", "measured", "met"], rows: r.targets.map((t) => [t.name, t.goal, t.measured, t.met ? "yes" : "NO"]) },
  ].filter((s) => s.rows.length > 0); // a section left out by --sections prints nothing
}

export function printTables(r: Results): void {
  for (const s of sections(r)) {
    const table = new Table({ head: s.head, style: { head: [], border: [] } });
    table.push(...s.rows);
    console.log(`\n${s.title}\n${table.toString()}`);
    for (const note of s.notes ?? []) console.log(`  ${note}`);
  }
}

/** Other work was competing for the cores when the run began (1-minute load average above the core count). */
function busy(m: Results["machine"]): boolean {
  return m.loadStart[0] > m.nproc;
}

export function markdown(r: Results): string {
  const m = r.machine;
  const out = [
    "# Benchmark results",
    "",
    `Measured by \`${r.settings.command}\` on ${r.startedAt}, ${fmt(r.durationS)} s in all${r.settings.config.quick ? " (QUICK MODE: small sizes, a smoke test, not results)" : ""}.`,
    "Every system ran on the same local Postgres, each in a fresh database of its own, in the same run. Numbers from",
    "a shared 2-core machine are noisy: rerun before trusting a difference under ~20 %. Method: [README.md](README.md).",
    ...(busy(m) ? ["", `**The machine was busy** (load average ${m.loadStart[0].toFixed(1)} at start on ${m.nproc} cores): these numbers show that the harness ran, not how fast anything is. Rerun on an idle machine.`] : []),
    "",
    "## Machine",
    "",
    "```",
    `nproc: ${m.nproc}`,
    `cpu: ${m.cpu}`,
    m.memory.trimEnd(),
    `node: ${m.node}`,
    `postgres: ${m.postgres}`,
    `load average at start / end: ${m.loadStart.map((n) => n.toFixed(2)).join(" ")} / ${m.loadEnd.map((n) => n.toFixed(2)).join(" ")}`,
    "```",
  ];
  for (const s of sections(r)) {
    out.push("", `## ${s.title}`, "", `| ${s.head.join(" | ")} |`, `| ${s.head.map(() => "---").join(" | ")} |`);
    for (const row of s.rows) out.push(`| ${row.map((c) => c.replace(/\|/g, "\\|")).join(" | ")} |`);
    if (s.notes?.length) out.push("", ...s.notes.map((n) => `- ${n}`));
  }
  return `${out.join("\n")}\n`;
}
