// The real `akadze` binary (node bin/akadze.js), run as a user runs it.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

/** bin/akadze.js: spawn it with process.execPath for a long-running command (`akadze worker`). */
export const AKADZE_BIN = fileURLToPath(new URL("../../bin/akadze.js", import.meta.url));

/**
 * Each spawn of the CLI pays Node's and tsx's start-up, over a second of CPU: beside another suite on 2 cores
 * (load 30 and more) that is tens of seconds of real time. These are deadlines for that, not timing claims.
 */
/** How long one `runAkadze` may take before it is killed. */
export const CLI_RUN_TIMEOUT_MS = 120_000;
/** How long a spawned long-running `akadze` (a worker) gets to start and take its first jobs. */
export const CLI_START_TIMEOUT_MS = 120_000;
/** The timeout of a test that spawns the CLI: above the deadlines it waits on. */
export const CLI_TEST_TIMEOUT_MS = 240_000;

/** What a finished command left: its exit code and everything it printed. */
export interface CliRun { code: number; stdout: string; stderr: string }

/**
 * Runs `akadze ...args` to its end (CLI_RUN_TIMEOUT_MS at most). `env` goes over process.env; a key set to undefined is
 * removed, and AKADZE_DEBUG is removed unless `env` sets it, so errors stay one line.
 * @example const run = await runAkadze(["jobs", "list"], { DATABASE_URL: t.url });
 */
export function runAkadze(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  const merged: Record<string, string | undefined> = { ...process.env, AKADZE_DEBUG: undefined, ...env };
  for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
  return new Promise((resolve) => {
    execFile(process.execPath, [AKADZE_BIN, ...args], { env: merged, timeout: CLI_RUN_TIMEOUT_MS }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** A long-running `akadze` process (`akadze worker`), with what it printed so far. */
export interface AkadzeProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

/**
 * Starts `akadze ...args` (`bin`: another copy of the binary, e.g. from an installed tarball) with `env` over
 * process.env, collecting its output. The caller ends it (`child.kill`) and awaits `exited`.
 * @example const worker = startAkadze(["worker", APP], { env: { DATABASE_URL: t.url } });
 */
export function startAkadze(args: string[], options: { env?: Record<string, string>; cwd?: string; bin?: string } = {}): AkadzeProcess {
  const child = spawn(process.execPath, [options.bin ?? AKADZE_BIN, ...args], {
    cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => { stdout += d; });
  child.stderr!.on("data", (d) => { stderr += d; });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}
