// An earlier akadze, measured beside this one in the same run: `npm run bench -- --baseline <checkout>` loads the
// checkout's own sources (with its own migrations), so a change is judged against its base under the same machine
// load, round by round, instead of against a figure from another hour.
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import * as current from "../src/index.js";

/** What the burn-down and worker measurements use of akadze: this checkout's, or a baseline's. */
export interface AkadzeLib {
  /** "akadze" for this checkout, "akadze@<commit>" for a baseline. */
  name: string;
  createApp: typeof current.createApp;
  runOnce: typeof current.runOnce;
  runWorker: typeof current.runWorker;
  migrate: typeof current.migrate;
}

export const CURRENT: AkadzeLib = { name: "akadze", createApp: current.createApp, runOnce: current.runOnce, runWorker: current.runWorker, migrate: current.migrate };

/** The akadze of another checkout (its src/index.ts, run through tsx as this one is), named by its commit. */
export async function loadBaseline(checkout: string): Promise<AkadzeLib> {
  const root = resolve(checkout);
  let commit: string;
  try {
    commit = execFileSync("git", ["-C", root, "rev-parse", "--short", "HEAD"]).toString().trim();
  } catch {
    throw new Error(`--baseline ${checkout}: not a git checkout of akadze`);
  }
  const lib = (await import(pathToFileURL(resolve(root, "src/index.ts")).href)) as typeof current;
  return { name: `akadze@${commit}`, createApp: lib.createApp, runOnce: lib.runOnce, runWorker: lib.runWorker, migrate: lib.migrate };
}
