// `akadze dev`'s watch mode, as a user meets it: the real binary on a small app in a temporary project with
// the default database (PGlite in .akadze/pglite). Editing a task's file restarts the app once per burst of
// writes, with one line naming the file; a job queued before the restart runs after it, with the new code.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PGLITE_LOCK_FILE } from "../../src/dev/pglite-lock.js";
import { AKADZE_BIN } from "../support/cli.js";
import { waitFor } from "../support/wait-for.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const SRC = join(ROOT, "src");

/**
 * The task's module; `version` is what its log lines start with. "later" waits (a snooze) until v2; "slow"
 * runs until the test creates the file `release` (not a source file: no restart).
 */
const tasksSource = (version: string) => `import * as v from "valibot";
import { existsSync } from "node:fs";
import { Snooze } from ${JSON.stringify(join(SRC, "index.ts"))};
export const args = v.object({ name: v.string() });
export async function greet({ name }: { name: string }) {
  if (name === "later" && ${JSON.stringify(version)} === "v1") {
    console.log("v1 snoozes later");
    throw new Snooze("1s");
  }
  if (name === "slow") {
    console.log(${JSON.stringify(version)} + " slow started");
    for (let i = 0; i < 400 && !existsSync("release"); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  console.log(${JSON.stringify(version)} + " greet " + name);
}
`;

const appSource = (comment = "") => `${comment}import { Hono } from "hono";
import { connect, createApp } from ${JSON.stringify(join(SRC, "index.ts"))};
import { akadzeRoutes } from ${JSON.stringify(join(SRC, "edge/hono.ts"))};
import { args, greet } from "./tasks.ts";
type Env = { DATABASE_URL: string; NEON_FETCH_ENDPOINT: string; CRON_SECRET: string };
export const app = createApp();
const task = app.task("greet", { args }, greet);
export const web = new Hono<{ Bindings: Env }>();
web.post("/greet/:name", async (c) => c.json({ id: await task.using(await connect(c.env)).enqueue({ name: c.req.param("name") }) }));
web.route("/akadze", akadzeRoutes<{ Bindings: Env }>(app, { getDb: (c) => connect(c.env), getSecret: (c) => c.env.CRON_SECRET }));
`;

let project: string;
let dev: ChildProcess | undefined;
let out = "";

/** A port whose next one is free too (the app and its Neon endpoint). */
async function freePortPair(): Promise<number> {
  const listen = (port: number) => new Promise<number | undefined>((resolve) => {
    const server = createServer().once("error", () => resolve(undefined));
    server.listen(port, "127.0.0.1", () => {
      const { port: got } = server.address() as { port: number };
      server.close(() => resolve(got));
    });
  });
  for (;;) {
    const port = await listen(0);
    if (port && port < 65534 && await listen(port + 1)) return port;
  }
}

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), "akadze-watch-"));
  writeFileSync(join(project, "package.json"), JSON.stringify({ type: "module", akadze: { app: "./app.ts" } }));
  symlinkSync(join(ROOT, "node_modules"), join(project, "node_modules"), "dir"); // hono, valibot, drizzle: the checkout's
  writeFileSync(join(project, "tasks.ts"), tasksSource("v1"));
  writeFileSync(join(project, "app.ts"), appSource());
  for (const ignored of ["dist", ".cache"]) mkdirSync(join(project, ignored));
});

afterAll(async () => {
  if (dev && dev.exitCode === null) {
    const exited = new Promise((resolve) => dev!.once("exit", resolve));
    dev.kill("SIGKILL");
    await exited;
  }
  rmSync(project, { recursive: true, force: true });
});

it("a change restarts the app once, says which file changed, and queued and running jobs survive it", async () => {
  const port = await freePortPair();
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.DATABASE_URL; // the default: PGlite in .akadze/pglite
  delete env.AKADZE_DEBUG;
  dev = spawn(process.execPath, [AKADZE_BIN, "dev", "--port", String(port), "--log-level", "warn"], { cwd: project, env, stdio: ["ignore", "pipe", "pipe"] });
  dev.stdout!.on("data", (d) => { out += d; });
  dev.stderr!.on("data", (d) => { out += d; });
  const exited = new Promise<number | null>((resolve) => dev!.once("exit", (code) => resolve(code)));
  const printed = (text: string) => waitFor(() => out.includes(text) || dev!.exitCode !== null, JSON.stringify(text), { timeoutMs: 60_000 })
    .then(() => expect(out).toContain(text));
  const post = async (name: string) => {
    const res = await fetch(`http://127.0.0.1:${port}/greet/${name}`, { method: "POST" });
    expect(res.status).toBe(200);
  };

  await printed("Ctrl-C stops.");
  expect(out).toContain("Watching the project's source files: a change restarts the app");
  await post("first");
  await printed("v1 greet first");
  await post("later");
  await printed("v1 snoozes later"); // queued again, for a second later
  await post("slow");
  await printed("v1 slow started");

  // An editor's save: two files in one burst, one restart. The old app first finishes the job it runs.
  // Files under dist/ and dot-folders are not watched: they are not among the changed files the line counts.
  writeFileSync(join(project, "dist/app.js"), "");
  writeFileSync(join(project, ".cache/app.ts"), "");
  writeFileSync(join(project, "tasks.ts"), tasksSource("v2"));
  writeFileSync(join(project, "app.ts"), appSource("// edited\n"));
  await printed("changed: waiting for the running jobs to finish before the restart");
  expect(out).not.toContain("changed: restarted");
  writeFileSync(join(project, "release"), "");
  await printed("changed: restarted");
  expect(out.indexOf("v1 greet slow")).toBeGreaterThan(-1);
  expect(out.indexOf("v1 greet slow")).toBeLessThan(out.indexOf("changed: restarted"));
  expect(out).toMatch(/\d\d:\d\d:\d\d (tasks\.ts|app\.ts) and 1 more changed: restarted\n/);
  await printed("v2 greet later"); // queued before the restart, run after it, by the new code
  await post("after");
  await printed("v2 greet after");
  expect(out).not.toContain("v1 greet after");
  expect(out).not.toContain("v2 slow started"); // the running job ended in the old app, once
  expect(out.match(/changed: restarted/g)).toHaveLength(1);
  expect(out.match(/akadze dev\n/g)).toHaveLength(1); // the banner once; a restart is one line

  // Ctrl-C's SIGTERM twin: the child stops gracefully (its PGlite lock released), then the watcher exits.
  dev.kill("SIGTERM");
  expect(await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve("still running"), 60_000))])).toBe(0);
  expect(out).toContain("stopping: letting running jobs finish");
  expect(existsSync(join(project, ".akadze/pglite", PGLITE_LOCK_FILE))).toBe(false);
}, 240_000);
