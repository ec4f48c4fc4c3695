import type { Command } from "commander";
import { migrate } from "../migrate.js";
import { renderMetrics } from "../ops/metrics.js";
import type { CliContext } from "./context.js";
import { print, printJson } from "./output.js";

/** The maintenance commands, which run no jobs: `akadze migrate`, `akadze metrics`, `akadze beat`. */
export function registerMaintenance(program: Command, ctx: CliContext): void {
  program.command("migrate").description("create or update akadze's tables (safe to run from several processes at once)")
    .action((_opts, cmd: Command) => ctx.withDb(cmd, async (db, connection) => {
      const { applied, completed } = await migrate(db);
      if (ctx.json(cmd)) return printJson({ applied, completed });
      if (completed.length > 0) print(`completed the schema drizzle-kit made at ${connection.where}: added ${completed.join(", ")} (the tables stay drizzle-kit's)`);
      else if (applied.length > 0) print(`applied ${applied.join(", ")} to ${connection.where}`);
      else print(`${connection.where} is up to date`);
    }));

  program.command("metrics").description("Prometheus metrics (the same text as GET /metrics)")
    .action((_opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      process.stdout.write(await renderMetrics(db));
    }));

  program.command("beat").description("there is no beat process: schedules run inside every invocation")
    .action(() => {
      print([
        "akadze has no beat process, and needs none.",
        "Schedules (app.periodic, app.addSchedules) are checked inside every invocation: each runOnce,",
        "each worker claim, each POST /work enqueues the slots that came due, exactly once across all of them.",
        "Keep something invoking: a cron trigger (Cloudflare, Vercel), `akadze worker`, or `akadze dev`.",
      ].join("\n"));
    });
}
