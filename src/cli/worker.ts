import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { Command } from "commander";
import type { App } from "../app/app.js";
import { DEFAULT_RETENTION } from "../ops/retention.js";
import { DEFAULT_SLOTS } from "../runtime/run-once.js";
import { DEFAULT_MAX_POLL, DEFAULT_PREFETCH_PER_SLOT, runWorker } from "../runtime/worker.js";
import { CliError, describeError, UsageError } from "./errors.js";
import type { CliContext } from "./main.js";
import { print, printJson } from "./output.js";
import { collect, duration, positiveInt } from "./parse.js";

const EXPORT = /^(.+):([A-Za-z_$][\w$]*)$/;

/** Imports the app a worker runs: `path/to/module` (export `app`) or `path/to/module:exportName`. */
export async function loadApp(spec: string): Promise<App> {
  const [, file, name] = EXPORT.exec(spec) ?? [spec, spec, "app"];
  const path = resolve(process.cwd(), file);
  if (!existsSync(path)) throw new UsageError(`no such file: ${file}`);
  let module: Record<string, unknown>;
  try {
    module = await import(pathToFileURL(path).href);
  } catch (error) {
    const code = (error as { code?: string })?.code;
    if (code === "ERR_UNKNOWN_FILE_EXTENSION") {
      throw new CliError(`cannot load ${file}: TypeScript needs tsx (npm i -D tsx) next to akadze, or point at the compiled .js`);
    }
    throw new CliError(`cannot load ${file}: ${describeError(error)}`, { cause: error });
  }
  const app = module[name] ?? (name === "app" ? (module.default as Record<string, unknown> | undefined)?.app ?? module.default : undefined);
  // Duck-typed: the app module may import its own copy of akadze.
  if (!app || typeof app !== "object" || !((app as App).tasks instanceof Map) || !(app as App).hooks) {
    const names = Object.keys(module).join(", ") || "nothing";
    throw new UsageError(`${file} does not export an akadze app as "${name}" (it exports ${names}); use ${file}:exportName`);
  }
  return app as App;
}

/** `akadze worker APP --queue Q... --slots N`. */
export function registerWorker(program: Command, ctx: CliContext): void {
  program.command("worker").description("run jobs until Ctrl-C/SIGTERM, then finish running jobs and release the rest")
    .argument("<app>", 'module exporting the app: "./src/app.ts" or "./dist/jobs.js:exportName"')
    .option("--queue <name>", "a queue to run (repeat for more; each gets --slots); default every queue", collect)
    .option("--slots <n>", `jobs running at once per queue (default ${DEFAULT_SLOTS})`, positiveInt)
    .option("--prefetch <n>", `jobs claimed ahead and held per queue (default ${DEFAULT_PREFETCH_PER_SLOT} x --slots)`, positiveInt)
    .option("--retention <age>", `prune succeeded, cancelled and rate_limited jobs finished longer ago (default ${DEFAULT_RETENTION})`, duration)
    .option("--retention-failed <age>", "also prune failed jobs finished longer ago (default: keep them)", duration)
    .option("--lease <duration>", "how long a claim holds a job before others may recover it (default 30s)", duration)
    .option("--max-poll <duration>", `longest wait between polls of an idle queue (default ${DEFAULT_MAX_POLL})`, duration)
    .action(async (spec: string, opts, cmd: Command) => {
      const app = await loadApp(spec);
      await ctx.withDb(cmd, async (db, connection) => {
        const stop = new AbortController();
        const onSignal = (signal: NodeJS.Signals) => {
          if (stop.signal.aborted) {
            process.stderr.write(`akadze: ${signal} again: exiting now; unfinished jobs are recovered when their leases expire\n`);
            process.exit(130);
          }
          process.stderr.write(`akadze: ${signal}: taking no new jobs, letting running ones finish (${signal} again to exit at once)\n`);
          stop.abort();
        };
        process.on("SIGINT", onSignal);
        process.on("SIGTERM", onSignal);
        let lastError = "";
        let lastErrorAt = 0;
        const queues: string[] | undefined = opts.queue;
        const slots = opts.slots ?? DEFAULT_SLOTS;
        try {
          const summary = await runWorker(app, {
            db, queues, slots, prefetch: opts.prefetch, signal: stop.signal, lease: opts.lease, maxPoll: opts.maxPoll,
            retention: { finished: opts.retention, failed: opts.retentionFailed ?? null },
            onError: (error) => {
              // A database outage would repeat on every lane and poll: say it once, then every 30 s.
              const line = describeError(error, connection.where);
              if (line !== lastError || Date.now() - lastErrorAt > 30_000) process.stderr.write(`akadze: ${line}\n`);
              lastError = line;
              lastErrorAt = Date.now();
            },
            onStart: (id) => {
              if (ctx.json(cmd)) return;
              const what = queues ? queues.map((q) => `${q} (${slots} slots)`).join(", ") : `every queue (${slots} slots)`;
              print(`worker ${id} started on ${connection.where}: ${what}, ${app.tasks.size} tasks`);
            },
          });
          if (ctx.json(cmd)) return printJson(summary);
          print(`worker ${summary.id} stopped: ${summary.jobsDone} runs (${summary.succeeded} succeeded, ${summary.retried} retried, ${summary.failed} failed), ${summary.released} released`);
        } finally {
          process.off("SIGINT", onSignal);
          process.off("SIGTERM", onSignal);
        }
      });
    });
}
