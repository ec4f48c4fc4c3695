// The real `akadze` binary (node bin/akadze.js), run as a user runs it.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

/** bin/akadze.js: spawn it with process.execPath for a long-running command (`akadze worker`). */
export const AKADZE_BIN = fileURLToPath(new URL("../../bin/akadze.js", import.meta.url));

/** What a finished command left: its exit code and everything it printed. */
export interface CliRun { code: number; stdout: string; stderr: string }

/**
 * Runs `akadze ...args` to its end (60 s at most). `env` goes over process.env; a key set to undefined is
 * removed, and AKADZE_DEBUG is removed unless `env` sets it, so errors stay one line.
 * @example const run = await runAkadze(["jobs", "list"], { DATABASE_URL: t.url });
 */
export function runAkadze(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  const merged: Record<string, string | undefined> = { ...process.env, AKADZE_DEBUG: undefined, ...env };
  for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
  return new Promise((resolve) => {
    execFile(process.execPath, [AKADZE_BIN, ...args], { env: merged, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}
