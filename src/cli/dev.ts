import type { Command } from "commander";
import { CliError } from "./errors.js";
import type { CliContext } from "./main.js";
import { positiveInt } from "./parse.js";

/** The options `src/dev/command.ts` takes (built with the local development server). */
interface DevCommandModule {
  runDevCommand(options: { database?: string; port?: number; demo?: boolean; http?: boolean }): Promise<void>;
}

/** `akadze dev`: the local server lives in src/dev; imported only when asked for, so other commands stay light. */
export function registerDev(program: Command, _ctx: CliContext): void {
  program.command("dev").description("local development: embedded PGlite (or DATABASE_URL), a Neon-compatible endpoint, invocations")
    .option("--port <n>", "port of the local endpoint", positiveInt)
    .option("--demo", "enqueue a mix of example jobs and show their progress")
    .action(async (opts, cmd: Command) => {
      const globals = cmd.optsWithGlobals();
      const specifier = "../dev/command.js"; // not a literal: the module may not be built into every checkout
      let dev: DevCommandModule;
      try {
        dev = (await import(specifier)) as DevCommandModule;
      } catch (error) {
        if ((error as { code?: string })?.code === "ERR_MODULE_NOT_FOUND" && String((error as Error).message).includes("command")) {
          throw new CliError("akadze dev is not available in this build");
        }
        throw error;
      }
      await dev.runDevCommand({ database: globals.database ?? process.env.DATABASE_URL, port: opts.port, demo: opts.demo, http: globals.http });
    });
}
