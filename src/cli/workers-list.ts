import type { Command } from "commander";
import { DEFAULT_WORKERS_SINCE, listWorkers, type WorkerRow } from "../ops/workers.js";
import type { CliContext } from "./context.js";
import { formatAgo, printRows } from "./output.js";
import { duration, positiveInt } from "./parse.js";

/** `akadze workers list`. */
export function registerWorkersList(program: Command, ctx: CliContext): void {
  const workers = program.command("workers").description("the invocations and workers that ran jobs");
  workers.command("list").description(`live invocations and workers, and those gone within --since (default ${DEFAULT_WORKERS_SINCE})`)
    .option("--since <age>", "also show the ones gone within this long", duration)
    .option("--all", "every row still in the registry (kept a day)")
    .option("--limit <n>", "show at most this many (default 100)", positiveInt)
    .action((opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const rows = await listWorkers(db, { since: opts.since, all: opts.all, limit: opts.limit });
      const now = new Date();
      printRows<WorkerRow>(ctx.json(cmd), rows, "no invocations or workers seen recently", [
        ["ID", (w) => w.id], ["KIND", (w) => w.kind], ["STATUS", (w) => w.status],
        ["QUEUES", (w) => (w.queues.length ? w.queues.join(",") : "*")], ["RUNNING", (w) => w.running],
        ["JOBS DONE", (w) => w.jobsDone], ["STARTED", (w) => formatAgo(w.startedAt, now)],
        ["LAST SEEN", (w) => formatAgo(w.lastSeenAt, now)], ["STOPPED", (w) => formatAgo(w.stoppedAt, now)],
        ["STARTED BY", (w) => w.startedBy ?? ""],
      ]);
    }));
}
