// Finding and importing the application module that `akadze dev` and `akadze worker` run.
import { existsSync, readFileSync } from "node:fs";
import { extname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { App } from "../app/app.js";
import { CliError, UsageError } from "./errors.js";

/** The app module when nothing names one and package.json has no "akadze" field: the checkout's example. */
export const FALLBACK_APP_MODULE = "functions/dev.ts";

/** What the app module must export, for messages. */
export const APP_MODULE_SHAPE = "it must export `app` (createApp()) and, for `akadze dev`, `web` (a Hono app) and optionally `setup(db)`";

const TYPESCRIPT = new Set([".ts", ".mts", ".cts", ".tsx"]);
const TSX_REGISTERED = Symbol.for("akadze.tsx");
/** `path/to/module:exportName`. */
const EXPORT = /^(.+):([A-Za-z_$][\w$]*)$/;

/**
 * The app module to load: the one named on the command line, else package.json's `"akadze": { "app": "..." }`
 * (written by `akadze init`), else functions/dev.ts when it exists. Says what it expected when none is found.
 * @example const file = findAppModule(undefined, process.cwd()); // "./akadze/app.ts"
 */
export function findAppModule(named: string | undefined, cwd: string = process.cwd()): string {
  if (named) return named;
  const pkgPath = join(cwd, "package.json");
  if (existsSync(pkgPath)) {
    let pkg: { akadze?: { app?: unknown } | string };
    try {
      pkg = JSON.parse(readFileSync(pkgPath, "utf8"));
    } catch (error) {
      throw new CliError(`cannot read ${pkgPath}: ${(error as Error).message}`, { cause: error });
    }
    const configured = typeof pkg.akadze === "string" ? pkg.akadze : pkg.akadze?.app;
    if (configured !== undefined) {
      if (typeof configured !== "string" || configured === "") throw new UsageError('package.json "akadze.app" must be a path such as "./akadze/app.ts"');
      return configured;
    }
  }
  if (existsSync(join(cwd, FALLBACK_APP_MODULE))) return FALLBACK_APP_MODULE;
  throw new UsageError(`no app module found in ${cwd}: pass --app ./path/to/app.ts, or add "akadze": { "app": "./path/to/app.ts" } ` +
    `to package.json (\`npx akadze init\` scaffolds both); ${APP_MODULE_SHAPE}`);
}

/**
 * Imports a module by path from the cwd; a TypeScript file loads through tsx (registered on first use).
 * @example const module = await importModule("./akadze/app.ts");
 */
export async function importModule(file: string, cwd: string = process.cwd()): Promise<Record<string, unknown>> {
  const path = resolve(cwd, file);
  if (!existsSync(path)) throw new UsageError(`no such file: ${file} (resolved from ${cwd})`);
  if (TYPESCRIPT.has(extname(path)) && !(globalThis as Record<symbol, unknown>)[TSX_REGISTERED]) await registerTsx(file);
  try {
    return await import(pathToFileURL(path).href);
  } catch (error) {
    if ((error as { code?: string })?.code === "ERR_UNKNOWN_FILE_EXTENSION") {
      throw new CliError(`cannot load ${file}: TypeScript needs tsx (npm install -D tsx), or point at the compiled .js`, { cause: error });
    }
    const message = String((error as Error)?.message ?? error);
    if (REQUIRED_ESM.test(message) || REQUIRED_ESM.test(String((error as { code?: string })?.code))) {
      throw new CliError(`cannot load ${file}: it was loaded as CommonJS, and akadze is an ES module (${message.split("\n")[0]}). ` +
        'Set "type": "module" in package.json (`npx akadze init` does in a new project), or name the module .mts', { cause: error });
    }
    throw new CliError(`cannot load ${file}: ${message}`, { cause: error });
  }
}

/** Node's refusals to require() an ES module: what a .ts app in a `"type": "commonjs"` package runs into. */
const REQUIRED_ESM = /Cannot require\(\) ES Module|ERR_REQUIRE_ESM|ERR_REQUIRE_CYCLE_MODULE|ERR_REQUIRE_ASYNC_MODULE|require\(\) of ES Module/;

async function registerTsx(file: string): Promise<void> {
  const specifier = "tsx/esm/api"; // not a literal: tsx is an optional peer, resolved from the app's project
  try {
    const { register } = (await import(specifier)) as { register(): unknown };
    register();
    (globalThis as Record<symbol, unknown>)[TSX_REGISTERED] = true;
  } catch (error) {
    throw new CliError(`cannot load ${file}: TypeScript apps need tsx next to akadze (npm install -D tsx), or point at the compiled .js`, { cause: error });
  }
}

/**
 * Imports the app a command runs (`akadze worker`, `akadze jobs unknown`, `--app`): `path/to/module`
 * (export `app`) or `path/to/module:exportName`; with no spec, the module package.json's "akadze.app" names.
 * @example const app = await loadApp("./akadze/app.ts");
 */
export async function loadApp(spec?: string): Promise<App> {
  const found = findAppModule(spec);
  const [, file, name] = EXPORT.exec(found) ?? [found, found, "app"];
  const module = await importModule(file);
  const app = module[name] ?? (name === "app" ? (module.default as Record<string, unknown> | undefined)?.app ?? module.default : undefined);
  // Duck-typed: the app module may import its own copy of akadze.
  if (!app || typeof app !== "object" || !((app as App).tasks instanceof Map) || !(app as App).hooks) {
    const names = Object.keys(module).join(", ") || "nothing";
    throw new UsageError(`${file} does not export an akadze app as "${name}" (it exports ${names}); use ${file}:exportName`);
  }
  return app as App;
}
