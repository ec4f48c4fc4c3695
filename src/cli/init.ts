import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import type { Command } from "commander";
import { UsageError } from "./errors.js";
import { appModule, cloudflareEntry, DEV_VARS, GITIGNORE_LINES, TSCONFIG, vercelConfig, vercelEntry, WRANGLER_ADDITIONS, wranglerToml } from "./init-files.js";
import type { CliContext } from "./context.js";
import { print, printJson } from "./output.js";

/** What `akadze init` did to one file. */
export interface InitStep { file: string; action: "created" | "updated" | "kept"; note?: string }

/**
 * Scaffolds akadze into the project in `cwd`: the app module, Cloudflare and Vercel entries, wrangler.toml
 * (cron, minify), vercel.json (cron), .dev.vars, .gitignore lines and package.json's "akadze.app". Existing
 * files are kept (the note says what to add by hand).
 * @example const steps = initProject(process.cwd(), { dir: "akadze" });
 */
export function initProject(cwd: string, options: { dir?: string } = {}): InitStep[] {
  const dir = (options.dir ?? "akadze").replace(/\\/g, "/").replace(/^\.\/|\/$/g, "");
  if (!dir || dir.startsWith("/") || dir.split("/").includes("..")) throw new UsageError("--dir must be a folder inside the project, e.g. akadze or src/jobs");
  const pkgPath = join(cwd, "package.json");
  if (!existsSync(pkgPath)) throw new UsageError(`no package.json in ${cwd}: run akadze init in your project's root (or \`npm init -y\` first)`);
  const pkgText = readFileSync(pkgPath, "utf8");
  const pkg = JSON.parse(pkgText) as Record<string, any>;
  const steps: InitStep[] = [];
  const write = (file: string, text: string, note?: string) => {
    const path = join(cwd, file);
    if (existsSync(path)) return steps.push({ file, action: "kept", note });
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    steps.push({ file, action: "created" });
  };

  const appFile = `${dir}/app.ts`;
  write(appFile, appModule());
  write(`${dir}/cloudflare.ts`, cloudflareEntry());
  const vercelFile = "api/akadze.ts";
  write(vercelFile, vercelEntry(posix.relative("api", `${dir}/app.js`).replace(/^(?!\.)/, "./")));
  write("wrangler.toml", wranglerToml(String(pkg.name ?? "app").replace(/[^a-z0-9-]/gi, "-").toLowerCase(), `${dir}/cloudflare.ts`),
    `exists: make sure it has main = "${dir}/cloudflare.ts" (or your own entry), ${WRANGLER_ADDITIONS}`);
  write("vercel.json", `${JSON.stringify({ $schema: "https://openapi.vercel.sh/vercel.json", ...vercelConfig(vercelFile) }, null, 2)}\n`,
    `exists: add ${JSON.stringify(vercelConfig(vercelFile))}`);
  write(".dev.vars", DEV_VARS, "exists: `akadze dev` prints the DATABASE_URL, NEON_FETCH_ENDPOINT and CRON_SECRET it serves");
  write("tsconfig.json", TSCONFIG, 'exists: the scaffold needs "module" and "moduleResolution" "NodeNext" (or "Bundler"), "strict", and "types": ["node"] ' +
    "under TypeScript 7 (which includes no @types package unless named)");

  const ignorePath = join(cwd, ".gitignore");
  const ignored = existsSync(ignorePath) ? readFileSync(ignorePath, "utf8").split(/\r?\n/).map((l) => l.trim()) : null;
  const missing = GITIGNORE_LINES.filter((line) => !ignored?.includes(line) && !ignored?.includes(line.replace(/\/$/, "")));
  if (missing.length > 0) {
    const lead = ignored && ignored.length > 0 && !readFileSync(ignorePath, "utf8").endsWith("\n") ? "\n" : "";
    appendFileSync(ignorePath, `${lead}${missing.join("\n")}\n`);
    steps.push({ file: ".gitignore", action: ignored ? "updated" : "created", note: `ignores ${missing.join(", ")}` });
  } else steps.push({ file: ".gitignore", action: "kept" });

  const changes: string[] = [];
  const configured = pkg.akadze?.app;
  if (configured === undefined) {
    pkg.akadze = { ...(typeof pkg.akadze === "object" ? pkg.akadze : {}), app: `./${appFile}` };
    changes.push(`"akadze": { "app": "./${appFile}" }, for akadze dev and akadze worker`);
  }
  const esm = moduleTypeChange(cwd, pkg.type);
  if (esm.set) {
    pkg.type = "module";
    changes.push(esm.note);
  }
  if (changes.length > 0) {
    const indent = /^(\s+)"/m.exec(pkgText)?.[1] ?? "  ";
    writeFileSync(pkgPath, `${JSON.stringify(pkg, null, indent)}\n`);
    steps.push({ file: "package.json", action: "updated", note: changes.join("; ") });
  }
  const kept = [configured !== undefined && `"akadze.app" is already ${JSON.stringify(configured)}`, !esm.set && esm.note].filter(Boolean);
  if (kept.length > 0) steps.push({ file: "package.json", action: "kept", note: kept.join("; ") });
  return steps;
}

/**
 * Whether init sets package.json's `"type": "module"`. akadze is an ES module, and so are the scaffolded
 * .ts files: in a CommonJS package (`npm init -y` writes `"type": "commonjs"`) tsx loads them as CommonJS
 * and Node refuses with "Cannot require() ES Module ... in a cycle". Setting the type is the fix that keeps
 * the files plain .ts for wrangler, Vercel and tsc alike; it is made only when no .js file of the project's
 * own would change meaning (a new project), else the note says what to do.
 */
function moduleTypeChange(cwd: string, type: unknown): { set: true; note: string } | { set: false; note: string | false } {
  if (type === "module") return { set: false, note: false };
  const was = type === undefined ? "no \"type\", so CommonJS" : `"type": ${JSON.stringify(type)}`;
  const scripts = ownJsFiles(cwd);
  if (scripts.length === 0) return { set: true, note: `"type": "module" (was ${was}): akadze and the scaffolded .ts files are ES modules` };
  return { set: false, note: `${was}, and ${scripts.slice(0, 3).join(", ")}${scripts.length > 3 ? ", ..." : ""} would change meaning as ES modules: ` +
    'set "type": "module" (renaming CommonJS files to .cjs), else akadze dev and akadze worker cannot load the .ts app (akadze is an ES module)' };
}

/** The project's own .js files (not node_modules, dot folders or build output), three folders deep at most. */
function ownJsFiles(dir: string, depth = 0, prefix = ""): string[] {
  if (depth > 3) return [];
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".") || SKIPPED_FOLDERS.has(entry.name)) continue;
    const path = prefix + entry.name;
    if (entry.isDirectory()) found.push(...ownJsFiles(join(dir, entry.name), depth + 1, `${path}/`));
    else if (/\.jsx?$/.test(entry.name)) found.push(path);
  }
  return found;
}

const SKIPPED_FOLDERS = new Set(["node_modules", "dist", "build", "out", "coverage"]);

/** Why the scaffold needs each development package, for the install line of `nextSteps`. */
const DEV_DEPS_WHY: [string, string][] = [
  ["typescript", "tsc"],
  ["@types/node", "Node's types, which the tsconfig names (TypeScript 7 includes none unless named)"],
  ["tsx", "akadze dev and akadze worker load TypeScript through it"],
];

/** The sentences after the list: what to install and run next. */
export function nextSteps(cwd: string): string[] {
  const pkg = JSON.parse(readFileSync(join(cwd, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>;
  const has = (name: string) => Boolean(pkg.dependencies?.[name] ?? pkg.devDependencies?.[name]);
  const deps = ["hono", "valibot"].filter((name) => !has(name));
  const devDeps = ["typescript", "@types/node", "tsx"].filter((name) => !has(name));
  const lines = ["", "Next:"];
  if (deps.length > 0) lines.push(`  npm install ${deps.join(" ")}        # the app module imports them`);
  if (devDeps.length > 0) lines.push(`  npm install -D ${devDeps.join(" ")}  # ${DEV_DEPS_WHY.filter(([name]) => devDeps.includes(name)).map(([, why]) => why).join("; ")}`);
  lines.push(
    "  npx tsc                        # type-checks the scaffold (with typescript installed: else npx fetches an unrelated package named tsc)",
    "  npx akadze dev                 # PGlite, the app on http://127.0.0.1:4000, a cron tick every second",
    "  curl -X POST localhost:4000/greet -H 'content-type: application/json' -d '{\"name\":\"ada\"}'",
    "  npx akadze migrate             # once per deploy, with DATABASE_URL set (or add akadze/schema to drizzle-kit)",
  );
  return lines;
}

/** `akadze init [--dir akadze]`. */
export function registerInit(program: Command, ctx: CliContext): void {
  program.command("init").description("scaffold akadze into this project: app module, Worker and Vercel entries, cron config, .dev.vars")
    .option("--dir <folder>", "where the app module and the Worker entry go (default akadze)")
    .action((opts, cmd: Command) => {
      const steps = initProject(process.cwd(), { dir: opts.dir });
      if (ctx.json(cmd)) return printJson(steps);
      for (const step of steps) print(`${step.action.padEnd(8)} ${step.file}${step.note ? `  (${step.note})` : ""}`);
      print(nextSteps(process.cwd()).join("\n"));
    });
}
