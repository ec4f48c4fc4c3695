// PGlite runs Postgres inside one process and does not lock its directory: a second process that opens
// the same directory (the CLI while `akadze dev` runs, a second `akadze dev`) writes beside the first and
// corrupts it. A lock file holding the owner's pid keeps that to one process; a lock whose process is gone
// is taken over.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AkadzeError } from "../core/errors.js";

/** The lock's file inside the PGlite directory (Postgres ignores files it does not know there). */
export const PGLITE_LOCK_FILE = "akadze.lock";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"; // exists, owned by someone else
  }
}

/**
 * Takes the PGlite directory `dir` for this process, or throws an AkadzeError naming the process that has
 * it and how to reach its database instead. Returns the release (also done when the process exits).
 * @example const release = lockPgliteDirectory(".akadze/pglite"); try { ... } finally { release(); }
 */
export function lockPgliteDirectory(dir: string, howToShare: string): () => void {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, PGLITE_LOCK_FILE);
  const mine = String(process.pid);
  try {
    writeFileSync(file, mine, { flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const owner = Number.parseInt(readFileSync(file, "utf8"), 10);
    if (Number.isInteger(owner) && owner !== process.pid && alive(owner)) {
      throw new AkadzeError(`the PGlite database in ${dir} is open in another process (pid ${owner}), and PGlite allows one process at a time: ${howToShare}`);
    }
    writeFileSync(file, mine); // its owner is gone (or is this process): take it over
  }
  const release = () => {
    process.off("exit", release);
    try {
      if (readFileSync(file, "utf8") === mine) rmSync(file);
    } catch {
      // already gone
    }
  };
  process.on("exit", release);
  return release;
}

/** What to do instead of opening akadze dev's PGlite directory a second time. */
export const SHARE_DEV_DATABASE = "stop that process, or, if it is `akadze dev`, reach its database through the endpoint it serves " +
  "(the CLI: --http with the DATABASE_URL and NEON_FETCH_ENDPOINT it prints)";
