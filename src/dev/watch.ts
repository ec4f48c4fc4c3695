// `akadze dev`'s watch mode: this process watches the project's source files and runs the dev server in a
// child process (the same command with --no-watch), replaced by a fresh one after every change. The
// database outlives the child: the default PGlite lives in a directory (.akadze/pglite) and a Postgres URL
// is a server, so the queue is the same after a restart. A child is stopped the way Ctrl-C stops `akadze
// dev` (running work finishes, held jobs are released) before the next one starts; one that takes longer
// than STOP_DEADLINE_MS is killed and its jobs come back when their leases expire.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, statSync, watch, type FSWatcher } from "node:fs";
import { extname, isAbsolute, join, relative, resolve } from "node:path";

/** Quiet time after the last change before the restart: an editor's save (or a branch switch) is one burst. */
export const WATCH_DEBOUNCE_MS = 150;
/**
 * How long a child gets to stop gracefully before it is killed: it waits for the tick in flight, which may
 * drain a backlog for the work route's whole budget (25 s unless the app sets another).
 */
export const STOP_DEADLINE_MS = 30_000;
/** A restart whose stop takes longer than this says what it waits for. */
const SLOW_STOP_MS = 1_000;
/** Folders never watched: dependencies, builds, VCS data; dot-folders (.akadze's database, .git) too. */
const IGNORED_DIRS = new Set(["node_modules", "dist", "build", "coverage"]);
/** What counts as a source file. */
const SOURCE = new Set([".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs", ".json"]);

/** The env a watched child reads (see `watchedChild`). */
const CHILD_ENV = "AKADZE_DEV_WATCHED";
const RESTART_ENV = "AKADZE_DEV_RESTARTED_FOR";

/** Messages between the watching parent and its child, over the IPC channel. */
type ToChild = { akadze: "stop"; quiet: boolean };
type ToParent = { akadze: "ready" };

/**
 * What a dev server run by the watcher needs: whether it is one, why it was (re)started, a way to say it is
 * serving, and a promise that resolves when the parent asks it to stop (or goes away). Undefined outside watch mode.
 */
export interface WatchedChild {
  /** The files whose change started this child ("functions/app.ts"), absent for the first start. */
  restartedFor?: string;
  ready(): void;
  /** Resolves with `quiet: true` for a restart (say nothing), false for a real stop. */
  stopRequested: Promise<{ quiet: boolean }>;
}

/** This process's part in watch mode, if it is a child of `akadze dev`'s watcher. */
export function watchedChild(): WatchedChild | undefined {
  if (!process.env[CHILD_ENV] || !process.send) return undefined;
  const restartedFor = process.env[RESTART_ENV] || undefined;
  // Not for the processes the app starts.
  delete process.env[CHILD_ENV];
  delete process.env[RESTART_ENV];
  const stopRequested = new Promise<{ quiet: boolean }>((resolveStop) => {
    const onMessage = (message: unknown) => {
      if ((message as ToChild)?.akadze === "stop") resolveStop({ quiet: (message as ToChild).quiet });
    };
    process.on("message", onMessage);
    // The watcher is gone (killed, crashed): stop as on Ctrl-C rather than linger on the ports.
    process.once("disconnect", () => resolveStop({ quiet: false }));
  });
  return {
    restartedFor,
    ready: () => { process.send?.({ akadze: "ready" } satisfies ToParent); },
    stopRequested,
  };
}

export interface DevWatchOptions {
  /** The command that runs one dev server: [script, ...args] after the node executable (`--no-watch` is added). */
  command: string[];
  /** Roots to watch (the project, and the app module's folder when it is elsewhere). */
  roots: string[];
  /** Paths in messages are relative to this (default the cwd). */
  cwd?: string;
  out?: { write(text: string): unknown };
}

/**
 * Runs `akadze dev` in a child and restarts it whenever a source file under `roots` changes; resolves with
 * the exit code after Ctrl-C/SIGTERM (or when the first child fails before it serves).
 * @example process.exitCode = await runDevWatch({ command: [process.argv[1], ...process.argv.slice(2)], roots: [process.cwd()] });
 */
export async function runDevWatch(options: DevWatchOptions): Promise<number> {
  const cwd = options.cwd ?? process.cwd();
  const out = options.out ?? process.stdout;
  const say = (text: string) => out.write(`${clockTime()} ${text}\n`);
  let child: ChildProcess | undefined;
  let childReady = false;
  let everReady = false;
  let stopping = false; // Ctrl-C: no more restarts
  let changed = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let restarting = false;
  let finish!: (code: number) => void;
  const finished = new Promise<number>((resolveFinish) => { finish = resolveFinish; });

  const start = (restartedFor?: string) => {
    childReady = false;
    const env: NodeJS.ProcessEnv = { ...process.env, [CHILD_ENV]: "1" };
    if (restartedFor) env[RESTART_ENV] = restartedFor;
    else delete env[RESTART_ENV];
    // Its own process group: Ctrl-C reaches only this process, which tells the child to stop, once. (Not on
    // Windows, where a detached child gets a console window of its own; there Ctrl-C reaches both, and the
    // child stops on it as on the message.)
    const spawned = spawn(process.execPath, [...process.execArgv, ...options.command, "--no-watch"], {
      cwd, env, stdio: ["ignore", "inherit", "inherit", "ipc"], detached: process.platform !== "win32",
    });
    child = spawned;
    spawned.on("message", (message) => {
      if ((message as ToParent)?.akadze !== "ready" || child !== spawned) return;
      childReady = everReady = true;
      // A stop asked for while it started may have come before it listened: ask again.
      if (stopping) spawned.send({ akadze: "stop", quiet: false } satisfies ToChild, () => {});
      else if (changed.size > 0 && !timer) void restart(); // changed while it started
    });
    spawned.once("exit", (code, signal) => {
      if (child === spawned) child = undefined;
      if (stopping) return finish(code ?? (signal ? 130 : 1));
      if (restarting) return; // restart() awaits this exit itself
      if (!everReady) return finish(code ?? 1); // never served: a usage error, a port in use...
      say(`the app stopped (${signal ?? `exit code ${code}`}); akadze dev restarts it when a file changes`);
    });
  };

  /** Asks the child to stop (quietly for a restart); kills it after the deadline. Resolves once it has exited. */
  const stopChild = (quiet: boolean, why = "") => {
    const current = child;
    if (!current || current.exitCode !== null || current.signalCode !== null) return Promise.resolve();
    const exited = new Promise<void>((resolveExit) => current.once("exit", () => resolveExit()));
    if (current.connected) current.send({ akadze: "stop", quiet } satisfies ToChild, () => {});
    else current.kill("SIGTERM");
    const slow = quiet ? setTimeout(() => say(`${why} changed: waiting for the running jobs to finish before the restart`), SLOW_STOP_MS) : undefined;
    const deadline = setTimeout(() => {
      out.write(`${clockTime()} akadze dev: the app did not stop within ${STOP_DEADLINE_MS / 1000} s: killed it; ` +
        "its running jobs are retried when their leases expire\n");
      current.kill("SIGKILL");
    }, STOP_DEADLINE_MS);
    return exited.finally(() => { clearTimeout(deadline); clearTimeout(slow); });
  };

  const restart = async () => {
    timer = undefined;
    if (stopping || restarting || changed.size === 0) return;
    // A child still starting (loading the app, opening PGlite) is replaced once it serves; one that has
    // exited (a syntax error) is started again at once.
    if (child && !childReady) return;
    const files = [...changed].map((file) => relative(cwd, file) || file);
    changed = new Set();
    const what = files.length === 1 ? files[0] : `${files[0]} and ${files.length - 1} more`;
    restarting = true;
    try {
      await stopChild(true, what);
    } finally {
      restarting = false;
    }
    if (stopping) return finish(0);
    start(what);
  };

  const watcher = watchSources(options.roots, (file) => {
    if (stopping) return;
    changed.add(file);
    clearTimeout(timer);
    timer = setTimeout(() => void restart(), WATCH_DEBOUNCE_MS);
  });

  let signals = 0;
  const onSignal = () => {
    signals++;
    stopping = true;
    clearTimeout(timer);
    watcher.close();
    if (signals > 1) {
      child?.kill("SIGKILL"); // the second Ctrl-C: at once
      return finish(130);
    }
    if (!child) return finish(0);
    void stopChild(false);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    start();
    return await finished;
  } finally {
    clearTimeout(timer);
    watcher.close();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/**
 * Watches the source files under `roots` (skipping node_modules, dist, build, coverage and dot-folders),
 * folders created later included, and calls `onChange` with the absolute path of each one written, created,
 * renamed or removed. Events that leave a file's size and mtime as they were are ignored.
 * @example const watcher = watchSources([process.cwd()], (file) => console.log(file, "changed")); watcher.close();
 */
export function watchSources(roots: string[], onChange: (file: string) => void): { close(): void } {
  const watchers = new Map<string, FSWatcher>();
  const seen = new Map<string, string>(); // file -> "size:mtime"
  const signature = (file: string) => {
    try {
      const s = statSync(file);
      return s.isFile() ? `${s.size}:${s.mtimeMs}` : undefined;
    } catch {
      return undefined;
    }
  };
  const add = (dir: string) => {
    if (watchers.has(dir)) return;
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    let w: FSWatcher;
    try {
      w = watch(dir, (_event, name) => {
        if (!name) return;
        const path = join(dir, name.toString());
        if (ignoredDir(name.toString())) return;
        const was = seen.get(path);
        const now = signature(path);
        if (now === undefined && was === undefined) {
          // A new folder (or something not a file): watch it; a removed folder stops its own watcher.
          if (existsSync(path) && statSync(path).isDirectory()) add(path);
          return;
        }
        if (!SOURCE.has(extname(path))) return;
        if (now === was) return;
        if (now === undefined) seen.delete(path);
        else seen.set(path, now);
        onChange(path);
      });
    } catch {
      return; // gone already, or not watchable
    }
    w.on("error", () => { w.close(); watchers.delete(dir); });
    watchers.set(dir, w);
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!ignoredDir(entry.name)) add(path);
      } else if (entry.isFile() && SOURCE.has(extname(entry.name))) {
        const sig = signature(path);
        if (sig) seen.set(path, sig);
      }
    }
  };
  for (const root of roots) add(resolve(root));
  return {
    close() {
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}

function ignoredDir(name: string): boolean {
  return name.startsWith(".") || IGNORED_DIRS.has(name);
}

/** The folders watch mode watches: the project (the cwd) and the app module's folder if it lies outside. */
export function watchRoots(appFile: string, cwd: string = process.cwd()): string[] {
  const appDir = resolve(cwd, appFile, "..");
  const fromCwd = relative(cwd, appDir);
  return fromCwd.startsWith("..") || isAbsolute(fromCwd) ? [cwd, appDir] : [cwd];
}

/** HH:MM:SS (UTC), the dev terminal's line prefix. */
const clockTime = () => new Date().toISOString().slice(11, 19);
