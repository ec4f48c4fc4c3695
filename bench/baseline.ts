// Which akadze the throughput and latency measurements run: this checkout's, or an earlier one's measured beside it
// in the same run (`npm run bench -- --baseline <checkout>`), so a change is judged against its base under the same
// machine load, round by round, instead of against a figure from another hour.
//
// `npm run bench` measures each as an app runs it: the package as `npm run build` compiles it (dist/), loaded by
// Node as JavaScript, as the peers' published packages are. (Until 2026-12-03 it ran the TypeScript sources through
// tsx, whose transform names every function as it is created: a cost per closure, so per job, that no user pays.)
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import * as sources from "../src/index.js";

/** What the burn-down, worker and latency measurements use of akadze: this checkout's, or a baseline's. */
export interface AkadzeLib {
  /** "akadze" for this checkout, "akadze@<commit>" for a baseline. */
  name: string;
  createApp: typeof sources.createApp;
  runOnce: typeof sources.runOnce;
  runWorker: typeof sources.runWorker;
  migrate: typeof sources.migrate;
}

function libOf(name: string, lib: typeof sources): AkadzeLib {
  return { name, createApp: lib.createApp, runOnce: lib.runOnce, runWorker: lib.runWorker, migrate: lib.migrate };
}

/**
 * This checkout's akadze: its sources as imported (scripts and tests), until `useBuiltAkadze` swaps in the
 * built package (bench/run.ts does so first). Read at each call, so every measurement takes the current one.
 */
export let CURRENT: AkadzeLib = libOf("akadze", sources);

/** Compiles the checkout at `root` as `npm run build` does and loads its dist/src/index.js. */
async function built(root: string): Promise<typeof sources> {
  const tsc = resolve(root, "node_modules/typescript/bin/tsc");
  if (!existsSync(tsc)) throw new Error(`${root}: no node_modules/typescript (run npm ci there first)`);
  execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" });
  return (await import(pathToFileURL(resolve(root, "dist/src/index.js")).href)) as typeof sources;
}

/** From now on CURRENT is this checkout's built package. */
export async function useBuiltAkadze(): Promise<void> {
  CURRENT = libOf("akadze", await built(resolve(import.meta.dirname, "..")));
}

/** The akadze of another checkout (built the same way as this one), named by its commit. */
export async function loadBaseline(checkout: string): Promise<AkadzeLib> {
  const root = resolve(checkout);
  let commit: string;
  try {
    commit = execFileSync("git", ["-C", root, "rev-parse", "--short", "HEAD"]).toString().trim();
  } catch {
    throw new Error(`--baseline ${checkout}: not a git checkout of akadze`);
  }
  return libOf(`akadze@${commit}`, await built(root));
}
