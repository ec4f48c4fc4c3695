// `akadze dev --demo` (`npm start`): send the application's sample requests, show job counts by
// state live while the cron ticks and nudges run them, and stop with a summary once all are terminal.
import { countJobsByTaskStatement } from "../sql/reads/count-jobs-by-task.js";
import { readRunOutcomeStatement, type RunOutcome } from "../sql/reads/read-run-outcome.js";
import Table from "cli-table3";
import { JOB_STATES, type JobState } from "../core/states.js";
import { queryJson, type Db } from "../db/query.js";

/** The requests a demo sends, and optional lines about the application's own rows at the end. */
export interface DemoScenario {
  requests: { method?: string; path: string; body?: unknown }[];
  report?(db: Db): Promise<string[]>;
}

export interface DemoResult {
  elapsedMs: number;
  /** Jobs by task and state when everything was terminal. */
  counts: Record<string, Partial<Record<JobState, number>>>;
}

/** Longest a demo waits for its jobs; they need a few seconds. */
export const DEMO_TIMEOUT_MS = 60_000;
const REFRESH_MS = 200;

interface Out { write(text: string): unknown; isTTY?: boolean }

/** What a demo needs of the dev server (`DevServer` has it; named here so the demo does not import the server). */
export interface DemoServer {
  appUrl?: string;
  db: Db;
  ticks: number;
  idle(): Promise<void>;
}

/**
 * Runs a demo against a started dev server; resolves when no job is queued or running.
 * @example await runDemo(server, module.demo, process.stdout);
 */
export async function runDemo(server: DemoServer, scenario: DemoScenario, out: Out, timeoutMs = DEMO_TIMEOUT_MS): Promise<DemoResult> {
  if (!server.appUrl) throw new Error("the demo needs the app served over HTTP");
  const started = Date.now();
  out.write(`Sending ${scenario.requests.length} requests to ${server.appUrl}:\n`);
  for (const request of scenario.requests) {
    const res = await fetch(`${server.appUrl}${request.path}`, {
      method: request.method ?? "POST",
      headers: { "content-type": "application/json" },
      body: request.body === undefined ? undefined : JSON.stringify(request.body),
    });
    out.write(`  ${request.method ?? "POST"} ${request.path} ${JSON.stringify(request.body ?? "")} -> ${res.status}\n`);
    await res.arrayBuffer();
  }
  out.write(`\nJobs run by nudges and by a tick of ${server.appUrl}/akadze/work every second:\n`);

  const live = new LiveBlock(out);
  let counts: DemoResult["counts"] = {};
  for (;;) {
    counts = await jobCounts(server.db);
    const elapsed = Date.now() - started;
    live.show(`${renderCounts(counts)}\n${(elapsed / 1000).toFixed(1)} s, ${server.ticks} cron ticks\n`);
    if (Object.keys(counts).length > 0 && active(counts) === 0) break;
    if (elapsed > timeoutMs) throw new Error(`the demo's jobs were not all finished after ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, REFRESH_MS));
  }
  await server.idle();
  const elapsedMs = Date.now() - started;
  out.write(`\n${await summary(server.db, counts, elapsedMs, server.ticks, scenario)}\n`);
  return { elapsedMs, counts };
}

async function jobCounts(db: Db): Promise<DemoResult["counts"]> {
  const rows = await queryJson<{ task: string; state: JobState; n: number }[]>(db, countJobsByTaskStatement());
  const counts: DemoResult["counts"] = {};
  for (const { task, state, n } of rows) (counts[task] ??= {})[state] = n;
  return counts;
}

function active(counts: DemoResult["counts"]): number {
  return Object.values(counts).reduce((sum, c) => sum + (c.queued ?? 0) + (c.running ?? 0), 0);
}

function renderCounts(counts: DemoResult["counts"]): string {
  const table = new Table({ head: ["task", ...JOB_STATES], style: { head: [], border: [] } });
  for (const [task, byState] of Object.entries(counts)) table.push([task, ...JOB_STATES.map((s) => String(byState[s] ?? 0))]);
  return table.toString();
}

async function summary(db: Db, counts: DemoResult["counts"], elapsedMs: number, ticks: number, scenario: DemoScenario): Promise<string> {
  const totals = Object.fromEntries(JOB_STATES.map((s) => [s, Object.values(counts).reduce((n, c) => n + (c[s] ?? 0), 0)]));
  const { failed, retriedThenSucceeded: retried } = await queryJson<RunOutcome>(db, readRunOutcomeStatement());
  const lines = [
    `Done in ${(elapsedMs / 1000).toFixed(1)} s with ${ticks} cron ticks: ${totals.succeeded} succeeded, ${totals.failed} failed, ${totals.cancelled} cancelled.`,
    `${retried} succeeded after a retry; snoozed jobs spent no attempt.`,
    ...failed.map((f) => `Failed: job ${f.id} (${f.task}) after attempt ${f.attempt}: ${f.message}`),
    ...(scenario.report ? await scenario.report(db) : []),
  ];
  return lines.join("\n");
}

/** A block of lines redrawn in place on a terminal, printed only when it changes elsewhere. */
class LiveBlock {
  private lines = 0;
  private last = "";
  constructor(private readonly out: Out) {}

  show(text: string): void {
    if (text === this.last) return;
    if (this.out.isTTY && this.lines > 0) this.out.write(`\x1b[${this.lines}A\x1b[0J`);
    else if (!this.out.isTTY && stripTime(text) === stripTime(this.last)) return; // only the clock moved
    this.out.write(text);
    this.last = text;
    this.lines = text.split("\n").length - 1;
  }
}

function stripTime(text: string): string {
  return text.replace(/^[\d.]+ s, /m, "");
}
