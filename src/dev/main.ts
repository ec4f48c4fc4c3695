// `tsx src/dev/main.ts [--demo] [--database URL|DIR|memory://] [--port N] [--no-http] [--app MODULE]`:
// akadze dev until the CLI's `dev` subcommand calls runDevCommand itself.
import { Command } from "commander";
import { runDevCommand } from "./command.js";

const program = new Command("akadze-dev")
  .description("local Neon-compatible endpoint over PGlite (or DATABASE_URL), the example app, and a cron tick")
  .option("--database <url|dir>", "postgres:// URL, PGlite directory or memory://")
  .option("--port <n>", "app port; the Neon endpoint takes the next one", (value) => Number(value))
  .option("--demo", "send sample requests, show progress, exit when all jobs are terminal")
  .option("--no-http", "only the Neon endpoint (the app runs under wrangler dev)")
  .option("--app <module>", "module exporting app and web", undefined)
  .parse();

runDevCommand(program.opts()).then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`akadze dev: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
