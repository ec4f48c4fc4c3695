// `akadze dev`: what the CLI's `dev` subcommand runs, over the dev server of src/dev.
import * as v from "valibot";
import { InvalidInput } from "../core/errors.js";
import { parseOrThrow } from "../core/validate.js";
import type { RunSummary } from "../runtime/run-once.js";
import { APP_MODULE_SHAPE, findAppModule, importModule } from "./load-module.js";
import { runDemo } from "../dev/demo.js";
import { findMisfits, misfitWarnings } from "../ops/misfits.js";
import { invocationLogLines, LOG_LEVELS, writeLogLines, type LogLevel } from "../ops/invocation-log.js";
import { DASHBOARD_PATH, DEV_DATA_DIR, DEV_PORT, startDevServer, WORK_PATH, type DevModule, type DevServer } from "../dev/dev-server.js";
import { watchedChild } from "../dev/watch.js";

/** Ticks (seconds) between repeats of the unknown-task and unlimited-key warnings. */
const MISFIT_EVERY_TICKS = 30;

export interface DevCommandOptions {
  /** A postgres:// URL, a PGlite directory or "memory://". Default: DATABASE_URL, else `.akadze/pglite`; the demo uses memory. */
  database?: string;
  /** The app's port (the Neon endpoint takes the next). Default 4000; the demo picks free ports. */
  port?: number;
  /** Send the module's sample requests, show progress live, print a summary and return when all jobs are terminal. */
  demo?: boolean;
  /** Serve the app and tick its work route (default true); false runs only the Neon endpoint, for `wrangler dev`. */
  http?: boolean;
  /** "info" (default): a line per busy tick; "warn"/"silent": none. Failed and retried jobs are logged by the work route. */
  log?: LogLevel;
  /** Module exporting `app`, `web` and optionally `setup` and `demo`. Default: package.json "akadze.app", else `functions/dev.ts`. */
  app?: string;
}

const Options = v.object({
  database: v.optional(v.pipe(v.string(), v.minLength(1, "--database must not be empty"))),
  port: v.optional(v.pipe(v.number("--port must be a number"), v.integer("--port must be a whole number"),
    v.minValue(0, "--port must be 0-65534"), v.maxValue(65534, "--port must be 0-65534"))),
  demo: v.optional(v.boolean()),
  http: v.optional(v.boolean()),
  app: v.optional(v.string()),
  log: v.optional(v.picklist(LOG_LEVELS, `--log-level must be one of ${LOG_LEVELS.join(", ")}`)),
});

/**
 * Runs `akadze dev` until Ctrl-C, or with `demo` until the demo is done.
 * @example await runDevCommand({ demo: true });
 */
export async function runDevCommand(options: DevCommandOptions = {}): Promise<void> {
  const o = parseOrThrow(Options, options, "dev options");
  if (o.demo && o.http === false) throw new InvalidInput("--demo needs the HTTP app: drop --no-http");
  // Run by watch mode's watcher (src/dev/watch.ts): it asks this process to stop, and a restart is one line.
  const watched = o.demo ? undefined : watchedChild();
  const file = findAppModule(o.app);
  const module = await loadDevModule(file);
  if (o.demo && !module.demo) throw new InvalidInput(`${file} exports no demo`);
  // The demo never touches a real database unless told to.
  const database = o.database ?? (o.demo ? "memory://" : process.env.DATABASE_URL ?? DEV_DATA_DIR);
  if (!/^postgres(ql)?:/.test(database) && !watched?.restartedFor) process.stdout.write("Starting PGlite (embedded Postgres, a few seconds)...\n");
  const port = o.port ?? (o.demo ? 0 : DEV_PORT);
  let ticks = 0;
  let dev: DevServer | undefined;
  // Jobs no task of this app can run (a typo, an old producer) or that run unlimited: said at start and now and then.
  const warnMisfits = async () => {
    if (!dev || o.log === "silent") return;
    const lines = misfitWarnings(await findMisfits(dev.db, [...module.app.tasks.keys()]).catch(() => ({ unknownTasks: [], unlimitedKeys: [] })));
    for (const line of lines) process.stderr.write(`akadze: ${line}\n`);
  };
  const server = await startDevServer({
    module,
    database,
    port,
    http: o.http ?? true,
    onTick: o.demo ? undefined : (summary) => {
      logTick(summary, o.log ?? "info");
      if (++ticks % MISFIT_EVERY_TICKS === 0) void warnMisfits();
    },
    // Nudges and fan-out siblings, next to the ticks' lines.
    onInvocationLine: o.demo || (o.log ?? "info") !== "info" ? undefined : (text) => process.stdout.write(`${clockTime()} ${text}\n`),
  }).catch((error: unknown) => {
    if ((error as { code?: string })?.code !== "EADDRINUSE") throw error;
    throw new InvalidInput(`port ${port} or ${port + 1} is in use (the app and its Neon endpoint): pass --port N for another pair, or stop the other server`, { cause: error });
  });
  try {
    if (o.demo) await runDemo(server, module.demo!, process.stdout);
    else {
      if (watched?.restartedFor) process.stdout.write(`${clockTime()} ${watched.restartedFor} changed: restarted\n`);
      else process.stdout.write(banner(server, server.appUrl ? await findDashboard(server.appUrl) : undefined, Boolean(watched)));
      dev = server;
      watched?.ready();
      await warnMisfits();
      const signalled = untilSignal().then(() => ({ quiet: false }));
      const { quiet } = await (watched ? Promise.race([watched.stopRequested, signalled]) : signalled);
      if (!quiet) process.stdout.write("\nstopping: letting running jobs finish\n");
    }
  } finally {
    await server.close();
  }
}

async function loadDevModule(path: string): Promise<DevModule> {
  const module = (await importModule(path)) as Partial<DevModule>;
  if (!module.app || typeof module.web?.fetch !== "function") {
    throw new InvalidInput(`${path} exports ${Object.keys(module).join(", ") || "nothing"}; ${APP_MODULE_SHAPE}`);
  }
  return module as DevModule;
}

/** The dashboard's URL if the served app enables it at DASHBOARD_PATH (its sign-in page answers). */
export async function findDashboard(appUrl: string): Promise<string | undefined> {
  const url = `${appUrl}${DASHBOARD_PATH}`;
  const res = await fetch(`${url}/login`).catch(() => undefined);
  await res?.body?.cancel();
  return res?.ok && res.headers.get("content-type")?.startsWith("text/html") ? url : undefined;
}

/** What `akadze dev` prints at start. @example process.stdout.write(banner(server, await findDashboard(server.appUrl!))); */
export function banner(server: DevServer, dashboardUrl?: string, watching = false): string {
  const { env } = server;
  const lines = [
    "akadze dev",
    `  database  ${server.backing}, migrated`,
    `  neon      ${env.NEON_FETCH_ENDPOINT} (Neon's HTTP protocol; WebSocket at the same port)`,
  ];
  if (server.appUrl) {
    lines.push(`  app       ${server.appUrl}`, `  cron      POST ${server.appUrl}${WORK_PATH} every second (Authorization: Bearer ${env.CRON_SECRET})`);
  }
  if (dashboardUrl) lines.push(`  dashboard ${dashboardUrl} (sign in with ${env.CRON_SECRET})`);
  lines.push("", "The CLI on this database, from another terminal (any command in place of `jobs list`):", `  ${cliLine(server)}`);
  lines.push("", "For `wrangler dev`, put this in .dev.vars:", `  DATABASE_URL=${env.DATABASE_URL}`,
    `  NEON_FETCH_ENDPOINT=${env.NEON_FETCH_ENDPOINT}`, `  CRON_SECRET=${env.CRON_SECRET}`, "");
  if (watching) lines.push("Watching the project's source files: a change restarts the app; queued jobs stay in the database (--no-watch: off).");
  lines.push("Ctrl-C stops.", "");
  return lines.join("\n");
}

/**
 * The command line that runs the CLI on what `akadze dev` serves: through its Neon endpoint over HTTP, which
 * works for a PGlite backing (one process may open its directory) and a Postgres one alike.
 * @example cliLine(server) // "DATABASE_URL=postgres://postgres@127.0.0.1:4001/postgres NEON_FETCH_ENDPOINT=http://127.0.0.1:4001/sql npx akadze --http jobs list"
 */
export function cliLine(server: Pick<DevServer, "env">, command = "jobs list"): string {
  return `DATABASE_URL=${server.env.DATABASE_URL} NEON_FETCH_ENDPOINT=${server.env.NEON_FETCH_ENDPOINT} npx akadze --http ${command}`;
}

/** The tick's summary line; its failed and retried jobs are logged by the work route itself (akadzeRoutes' `log`). */
function logTick(summary: RunSummary, level: LogLevel): void {
  const info = invocationLogLines(summary).filter((line) => line.level === "info");
  writeLogLines(info, level, ({ message }) => process.stdout.write(`${clockTime()} ${message}\n`));
}

/** HH:MM:SS (UTC), the dev terminal's line prefix. */
const clockTime = () => new Date().toISOString().slice(11, 19);

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => { process.off("SIGINT", stop); process.off("SIGTERM", stop); resolve(); };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}
