// Turns the results into tables: boxed for the terminal, pipe tables for bench/RESULTS.md.
import Table from "cli-table3";
import type { Results } from "./results.js";

export interface Section { title: string; head: string[]; rows: string[][]; notes?: string[] }

const fmt = (n: number | null | undefined, digits = 0) =>
  n === null || n === undefined || Number.isNaN(n) ? "—" : n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ratio = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : "—");

/** The sections every rendering shows, in order. */
export function sections(r: Results): Section[] {
  const peers = Object.keys(r.ratios[Object.keys(r.ratios)[0]] ?? {});
  return [
    {
      title: `Throughput: ${r.settings.jobs.toLocaleString("en-US")} no-op jobs, bulk enqueue then burn-down (median of ${r.settings.rounds} rounds where repeated)`,
      head: ["system", "enqueue jobs/s", "process jobs/s", "Postgres transactions/job", ...peers.flatMap((p) => [`enqueue vs ${p}`, `process vs ${p}`])],
      rows: Object.entries(r.throughput).map(([name, t]) => [
        name, fmt(t.enqueuePerSec), fmt(t.processPerSec), fmt(t.transactionsPerJob, 3),
        ...peers.flatMap((p) => r.ratios[name] ? [ratio(r.ratios[name][p].enqueue), ratio(r.ratios[name][p].processing)] : ["", ""]),
      ]),
      notes: [...Object.entries(r.settings.systems).map(([name, s]) => `${name}: ${s}`)],
    },
    {
      title: "Statements per job (akadze: enqueue in chunks of 1,000, then one runOnce loop until a claim comes back empty)",
      head: ["driver", "batch size", "jobs", "runOnce statements", "enqueue statements", "statements/job", "HTTP requests/job"],
      rows: r.statementsPerJob.map((s) => [s.driver, String(s.batchSize), fmt(s.jobs), fmt(s.processing), fmt(s.enqueue), fmt(s.perJob, 4), fmt(s.httpRequestsPerJob, 4)]),
    },
    {
      title: "Enqueue-to-start latency (ms), jobs arriving one at a time 5-25 ms apart",
      head: ["system", "how", "p50", "p99", "max", "samples"],
      rows: r.latency.map((l) => [l.system, l.how, fmt(l.p50, 1), fmt(l.p99, 1), fmt(l.max, 1), String(l.samples)]),
    },
    {
      title: "An invocation that finds nothing to do (akadze runOnce)",
      head: ["driver", "finished jobs in table", "round trips", "median ms", "p99 ms"],
      rows: r.idle.map((i) => [i.driver, fmt(i.finishedJobsInTable), String(i.roundTrips), fmt(i.medianMs, 2), fmt(i.p99Ms, 2)]),
    },
    {
      title: "Targets",
      head: ["target", "goal", "measured", "met"],
      rows: r.targets.map((t) => [t.name, t.goal, t.measured, t.met ? "yes" : "NO"]),
    },
  ];
}

export function printTables(r: Results): void {
  for (const s of sections(r)) {
    const table = new Table({ head: s.head, style: { head: [], border: [] } });
    table.push(...s.rows);
    console.log(`\n${s.title}\n${table.toString()}`);
    for (const note of s.notes ?? []) console.log(`  ${note}`);
  }
}

export function markdown(r: Results): string {
  const m = r.machine;
  const out = [
    "# Benchmark results",
    "",
    `Measured by \`${r.settings.command}\` on ${r.startedAt}, ${fmt(r.durationS)} s in all. Every system ran on the same local`,
    "Postgres, each in a fresh database of its own, in the same run. Numbers from a shared 2-core machine are noisy:",
    "rerun before trusting a difference under ~20 %.",
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
    for (const row of s.rows) out.push(`| ${row.join(" | ")} |`);
    if (s.notes?.length) out.push("", ...s.notes.map((n) => `- ${n}`));
  }
  return `${out.join("\n")}\n`;
}
