import { Command, CommanderError } from "commander";
import { createCliContext } from "./context.js";
import { registerDev } from "./dev.js";
import { registerInit } from "./init.js";
import { describeError, exitCodeOf, SaidExit } from "./errors.js";
import { registerJobs } from "./jobs.js";
import { registerLimits } from "./limits.js";
import { registerFair } from "./fair.js";
import { registerMaintenance } from "./maintenance.js";
import { registerQueues } from "./queues.js";
import { registerSchedules } from "./schedules.js";
import { registerWorkerCommand } from "./worker-command.js";
import { registerWorkersList } from "./workers-list.js";

/** The `akadze` program; `runCli` parses argv with it. */
export function buildProgram(): { program: Command; where: () => string | undefined } {
  const { ctx, where } = createCliContext();
  const program = new Command("akadze")
    .description("akadze: a Postgres job queue for serverless and edge runtimes")
    .option("--database <url|dir>", "postgres:// URL or PGlite directory (default: DATABASE_URL)")
    .option("--http", "reach the postgres:// URL over Neon's SQL-over-HTTP (neon-http driver)")
    .option("--neon-endpoint <url>", "SQL-over-HTTP endpoint for --http (default: NEON_FETCH_ENDPOINT, else Neon's)")
    .option("--json", "machine-readable output")
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`akadze: ${text.replace(/^error: /, "").trim()}\n`) })
    .showSuggestionAfterError(true);
  registerInit(program, ctx);
  registerMaintenance(program, ctx);
  registerWorkerCommand(program, ctx);
  registerDev(program, ctx);
  registerJobs(program, ctx);
  registerWorkersList(program, ctx);
  registerLimits(program, ctx);
  registerFair(program, ctx);
  registerQueues(program, ctx);
  registerSchedules(program, ctx);
  return { program, where };
}

/**
 * Runs the CLI and resolves with the exit code: 0, 1 for a failure, 2 for bad input. Every error is one
 * line on stderr (AKADZE_DEBUG=1 adds the stack).
 * @example process.exitCode = await runCli(process.argv);
 */
export async function runCli(argv: string[]): Promise<number> {
  const { program, where } = buildProgram();
  try {
    await program.parseAsync(argv);
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2; // commander already said why
    if (error instanceof SaidExit) return error.exitCode;
    process.stderr.write(`akadze: ${describeError(error, where())}\n`);
    if (process.env.AKADZE_DEBUG) process.stderr.write(`${(error as Error)?.stack ?? error}\n`);
    return exitCodeOf(error);
  }
}
