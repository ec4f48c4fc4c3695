import type { Command } from "commander";
import { SaidExit } from "./errors.js";
import { findAppModule } from "./load-module.js";
import type { CliContext } from "./context.js";
import { logLevel, port } from "./parse.js";
import { runDevWatch, watchRoots } from "../dev/watch.js";

/**
 * `akadze dev`: the command (`dev-command.ts`) and the server it runs (src/dev, with PGlite) are imported only when
 * asked for, so other commands start without them.
 */
export function registerDev(program: Command, _ctx: CliContext): void {
  program.command("dev").description("local development: embedded PGlite (or DATABASE_URL), a Neon-compatible endpoint, the app and its cron tick; the app restarts when a source file changes (--no-watch: off)")
    .option("--port <n>", "the app's port; the Neon endpoint takes the next (default 4000)", port)
    .option("--demo", "enqueue a mix of example jobs, show their progress live, then a summary")
    .option("--no-http", "serve only the Neon endpoint (the app runs under wrangler dev)")
    .option("--app <module>", "module exporting app and web (default: package.json \"akadze.app\", else functions/dev.ts)")
    .option("--log-level <level>", "info (default): a line per busy tick; warn or silent: none (the work route logs failed and retried jobs)", logLevel)
    .option("--no-watch", "do not restart the app when a source file in the project changes (watching is off anyway with --demo, --no-http or a memory:// database)")
    .action(async (opts, cmd: Command) => {
      // Only an explicit --database: the dev server picks DATABASE_URL or its own PGlite itself (the demo uses memory).
      const database: string | undefined = cmd.parent?.opts().database;
      // Watch mode: this process watches and runs the server in a child it restarts. Not for the demo (it ends by
      // itself), nor --no-http (the app runs under wrangler dev, which watches it), nor a database in memory (a
      // restart would empty it).
      if (opts.watch && !opts.demo && opts.http !== false) {
        if ((database ?? process.env.DATABASE_URL) === "memory://") {
          process.stderr.write("akadze: not watching for changes: the database is in memory (memory://) and a restart would lose its jobs\n");
        } else {
          const spec = findAppModule(opts.app);
          const appFile = /^(.+):[A-Za-z_$][\w$]*$/.exec(spec)?.[1] ?? spec;
          const code = await runDevWatch({ command: [process.argv[1]!, ...process.argv.slice(2)], roots: watchRoots(appFile) });
          if (code !== 0) throw new SaidExit(code);
          return;
        }
      }
      const { runDevCommand } = await import("./dev-command.js");
      await runDevCommand({ database, port: opts.port, demo: opts.demo, http: opts.http, app: opts.app, log: opts.logLevel });
    });
}
