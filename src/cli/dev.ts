import type { Command } from "commander";
import { CliError } from "./errors.js";
import type { CliContext } from "./context.js";
import { logLevel, port } from "./parse.js";
import type { LogLevel } from "../ops/invocation-log.js";

/** What `src/dev/command.ts` (the local development server) exports. */
interface DevCommandModule {
  runDevCommand(options: { database?: string; port?: number; demo?: boolean; http?: boolean; app?: string; log?: LogLevel }): Promise<void>;
}

/** `akadze dev`: the server lives in src/dev and is imported only when asked for, so other commands stay light. */
export function registerDev(program: Command, _ctx: CliContext): void {
  program.command("dev").description("local development: embedded PGlite (or DATABASE_URL), a Neon-compatible endpoint, the app and its cron tick")
    .option("--port <n>", "the app's port; the Neon endpoint takes the next (default 4000)", port)
    .option("--demo", "enqueue a mix of example jobs, show their progress live, then a summary")
    .option("--no-http", "serve only the Neon endpoint (the app runs under wrangler dev)")
    .option("--app <module>", "module exporting app and web (default: package.json \"akadze.app\", else functions/dev.ts)")
    .option("--log-level <level>", "info (default): a line per busy tick; warn or silent: none (the work route logs failed and retried jobs)", logLevel)
    .action(async (opts, cmd: Command) => {
      // Only an explicit --database: the dev server picks DATABASE_URL or its own PGlite itself (the demo uses memory).
      const database: string | undefined = cmd.parent?.opts().database;
      const specifier = "../dev/command.js"; // not a literal: a checkout may not have the dev server yet
      let dev: DevCommandModule;
      try {
        dev = (await import(specifier)) as DevCommandModule;
      } catch (error) {
        if ((error as { code?: string })?.code === "ERR_MODULE_NOT_FOUND" && String((error as Error).message).includes("dev/command")) {
          throw new CliError("akadze dev is not available in this build");
        }
        throw error;
      }
      await dev.runDevCommand({ database, port: opts.port, demo: opts.demo, http: opts.http, app: opts.app, log: opts.logLevel });
    });
}
