import type { Command } from "commander";
import { DEFAULT_RETENTION } from "../core/retention.js";
import { DEFAULT_SLOTS } from "../runtime/run-once.js";
import { DEFAULT_MAX_POLL, DEFAULT_PREFETCH_PER_SLOT, runWorker } from "../runtime/run-worker.js";
import { describeError } from "./errors.js";
import { throttledErrorReport } from "../runtime/error-report.js";
import { loadApp } from "./load-module.js";
import type { CliContext } from "./context.js";
import { print, printJson } from "./output.js";
import { collect, duration, logLevel, positiveInt } from "./parse.js";
import { invocationLogLines, writeLogLines, type LogLine } from "../ops/invocation-log.js";
import { findMisfits, misfitWarnings } from "../ops/misfits.js";

/** How often a running worker repeats the unknown-task and unlimited-key warnings. */
const MISFIT_CHECK_MS = 60_000;

/** `akadze worker APP --queue Q... --slots N`. */
export function registerWorkerCommand(program: Command, ctx: CliContext): void {
  program.command("worker").description("run jobs until Ctrl-C/SIGTERM, then finish running jobs and release the rest")
    .argument("[app]", 'module exporting the app: "./src/app.ts" or "./dist/jobs.js:exportName" (default: package.json "akadze.app")')
    .option("--queue <name>", "a queue to run (repeat for more; each gets --slots); default every queue", collect)
    .option("--slots <n>", `jobs running at once per queue (default ${DEFAULT_SLOTS})`, positiveInt)
    .option("--prefetch <n>", `jobs claimed ahead and held per queue (default ${DEFAULT_PREFETCH_PER_SLOT} x --slots)`, positiveInt)
    .option("--retention <age>", `prune succeeded, cancelled and rate_limited jobs finished longer ago (default ${DEFAULT_RETENTION})`, duration)
    .option("--retention-failed <age>", "also prune failed jobs finished longer ago (default: keep them)", duration)
    .option("--lease <duration>", "how long a claim holds a job before others may recover it (default 30s)", duration)
    .option("--max-poll <duration>", `longest wait between polls of an idle queue (default ${DEFAULT_MAX_POLL})`, duration)
    .option("--log-level <level>", "warn (default): a line per failed or retried job; info: also a line per invocation; silent", logLevel)
    .action(async (spec: string | undefined, opts, cmd: Command) => {
      const app = await loadApp(spec);
      await ctx.withDb(cmd, async (db, connection) => {
        const stop = new AbortController();
        const onSignal = (signal: NodeJS.Signals) => {
          if (stop.signal.aborted) {
            process.stderr.write(`${stamp()} akadze: ${signal} again: exiting now; unfinished jobs are recovered when their leases expire\n`);
            process.exit(130);
          }
          process.stderr.write(`${stamp()} akadze: ${signal}: taking no new jobs, letting running ones finish (${signal} again to exit at once)\n`);
          stop.abort();
        };
        process.on("SIGINT", onSignal);
        process.on("SIGTERM", onSignal);
        let misfitTimer: NodeJS.Timeout | undefined;
        // Every line the worker logs goes through --log-level: warnings to stderr, the rest to stdout, nothing when
        // silent; each with its time, since a worker runs for days.
        const log = (lines: LogLine[]) => writeLogLines(lines, opts.logLevel ?? "warn", ({ level, message }) => {
          if (level === "info") print(`${stamp()} ${message}`);
          else process.stderr.write(`${stamp()} akadze: ${message}\n`);
        });
        const queues: string[] | undefined = opts.queue;
        const slots = opts.slots ?? DEFAULT_SLOTS;
        try {
          const summary = await runWorker(app, {
            db, queues, slots, prefetch: opts.prefetch, signal: stop.signal, lease: opts.lease, maxPoll: opts.maxPoll,
            retention: { finished: opts.retention, failed: opts.retentionFailed ?? null },
            onError: throttledErrorReport((error) => describeError(error, connection.where), (line) => process.stderr.write(`${stamp()} akadze: ${line}\n`)),
            onInvocation: (summary) => log(invocationLogLines(summary, "worker")),
            onStart: (id) => {
              // Jobs this app can never run, or runs unlimited, are said at start and every minute while they last.
              const check = () => findMisfits(db, [...app.tasks.keys()]).then((m) => {
                log(misfitWarnings(m).map((text) => ({ level: "warn", text })));
              }, () => {});
              void check();
              misfitTimer = setInterval(check, MISFIT_CHECK_MS);
              misfitTimer.unref();
              if (ctx.json(cmd)) return;
              const what = queues ? queues.map((q) => `${q} (${slots} slots)`).join(", ") : `every queue (${slots} slots)`;
              print(`worker ${id} started on ${connection.where}: ${what}, ${app.tasks.size} tasks`);
            },
          });
          if (ctx.json(cmd)) return printJson(summary);
          print(`worker ${summary.id} stopped: ${summary.jobsDone} runs (${summary.succeeded} succeeded, ${summary.retried} retried, ${summary.failed} failed), ${summary.released} released`);
        } finally {
          clearInterval(misfitTimer);
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
        }
      });
    });
}

/** The time at the start of a worker's log line: ISO 8601 in UTC, to the millisecond. */
function stamp(): string {
  return new Date().toISOString();
}
