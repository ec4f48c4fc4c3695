import type { Command } from "commander";
import { deleteLimit, setLimit, type LimitOptions } from "../control.js";
import { listLimits, type LimitRow } from "../ops/limits.js";
import { CliError, UsageError } from "./errors.js";
import type { CliContext } from "./context.js";
import { formatMs, print, printJson, printRows } from "./output.js";
import { duration, positiveInt } from "./parse.js";

/** `akadze limits list|set|delete`. */
export function registerLimits(program: Command, ctx: CliContext): void {
  const limits = program.command("limits").description("cluster-wide limits per limitKey");

  limits.command("list").description("every limit and how much of it is in use")
    .action((_opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const rows = await listLimits(db);
      printRows<LimitRow>(ctx.json(cmd), rows, "no limits", [
        ["KEY", (l) => l.key],
        ["MAX STARTS", (l) => (l.maxStarts === null ? "-" : `${l.maxStarts}/${formatMs(l.windowMs)}`)],
        ["STARTS IN WINDOW", (l) => (l.maxStarts === null ? "-" : l.startsInWindow)],
        ["MAX RUNNING", (l) => l.maxRunning ?? "-"],
        ["RUNNING", (l) => (l.maxRunning === null ? "-" : l.running)],
      ]);
    }));

  limits.command("set").description("create or change a limit; options not given keep their value")
    .argument("<key>", "the limitKey jobs are enqueued with")
    .option("--max-starts <n>", "at most this many starts per --window", positiveInt)
    .option("--window <duration>", 'the sliding window of --max-starts, e.g. "1m"', duration)
    .option("--max-running <n>", "at most this many running at once", positiveInt)
    .action((key: string, opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const change: LimitOptions = {};
      if (opts.maxStarts !== undefined) change.maxStarts = opts.maxStarts;
      if (opts.window !== undefined) change.window = opts.window;
      if (opts.maxRunning !== undefined) change.maxRunning = opts.maxRunning;
      if (Object.keys(change).length === 0) throw new UsageError("give --max-starts with --window, or --max-running");
      const limit = await setLimit(db, key, change);
      if (ctx.json(cmd)) return printJson(limit);
      const parts = [limit.maxStarts !== null ? `${limit.maxStarts} starts per ${formatMs(limit.windowMs)}` : null,
        limit.maxRunning !== null ? `${limit.maxRunning} running` : null].filter(Boolean);
      print(`limit ${limit.key}: ${parts.join(", ")}`);
    }));

  limits.command("delete").description("remove a limit (running jobs keep running)")
    .argument("<key>", "the limit key")
    .action((key: string, _opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      if (!(await deleteLimit(db, key))) throw new CliError(`no limit ${JSON.stringify(key)}`);
      if (ctx.json(cmd)) return printJson({ key, deleted: true });
      print(`limit ${key}: deleted`);
    }));
}
