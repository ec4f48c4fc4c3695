// The newcomer's path, as a user walks it: the packed tarball installed in a fresh project, `akadze init`, the scaffold
// type-checked and migrated, jobs run through its route and its Cloudflare and Vercel crons on Postgres; then `akadze
// worker` from that install and from a linked checkout shares one akadze with the app (a task that needs `current()`).
import { execFile, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, type Db } from "../../src/index.js";
import { ADMIN_URL, urlFor } from "../support/postgres.js";
import { startAkadze } from "../support/cli.js";
import { waitFor } from "../support/wait-for.js";

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../..", import.meta.url));
const own = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
const DATABASE = `newcomer_${process.pid}`;

// A task that can only succeed when the CLI and the app share akadze's modules: `current()` reads the
// running job from the CLI's copy, and `Fail` is recognised only by identity.
const PROBE = `import { createApp, current, Fail } from "akadze";
export const app = createApp();
app.task("probe", async () => {
  const job = current(); // throws "only available inside a running task" from a second copy of akadze
  if (job.id < 0) throw new Fail("unreachable");
  return { job: job.id };
});
`;

// Runs the scaffolded entries in Node on Postgres: the route (with its nudge), the Worker's scheduled
// handler, and the Vercel function's GET /api/akadze/work (what Vercel Cron sends).
const CHECK = `import cloudflare from "./akadze/cloudflare.js";
import { greet, web } from "./akadze/app.js";
import { GET } from "./api/akadze.js";
import { connect, disconnectAll, getJob } from "akadze";

const env = { DATABASE_URL: process.env.DATABASE_URL!, CRON_SECRET: "s3cret" };
const waits: Promise<unknown>[] = [];
const ctx = { waitUntil: (p: Promise<unknown>) => { waits.push(p); }, passThroughOnException() {}, props: {} };
const routed = await web.fetch(new Request("http://app/greet", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ name: "route" }) }), env, ctx);
const { id: routeJob } = await routed.json() as { id: number };
await Promise.all(waits.splice(0));
const db = await connect(env);
const cronJob = await greet.using(db).enqueue({ name: "cron" });
cloudflare.scheduled({ cron: "* * * * *", scheduledTime: Date.now() }, env, ctx);
await Promise.all(waits.splice(0));
process.env.CRON_SECRET = env.CRON_SECRET;
const vercelJob = await greet.using(db).enqueue({ name: "vercel" });
const work = await GET(new Request("http://app/api/akadze/work", { headers: { authorization: "Bearer s3cret" } }));
const jobs = await Promise.all([routeJob, cronJob, vercelJob].map(async (id) => { const j = await getJob(db, id); return [j?.state, j?.result]; }));
console.log("RESULT " + JSON.stringify({ routed: routed.status, work: work.status, jobs }));
await disconnectAll();
`;

describe("a newcomer adds akadze to an existing project", () => {
  let root: string;
  let project: string;
  let admin: pg.Client;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`drop database if exists ${DATABASE}`);
    await admin.query(`create database ${DATABASE}`); // empty: the installed CLI migrates it
    root = mkdtempSync(join(tmpdir(), "akadze-newcomer-"));
    project = join(root, "app");
    mkdirSync(project);
  });

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
    rmSync(root, { recursive: true, force: true });
    await admin.query(`drop database if exists ${DATABASE} with (force)`);
    await admin.end();
  });

  it("packs, installs, scaffolds, type-checks, migrates and runs jobs through the route and both crons", async () => {
    const packed = await run("npm", ["pack", "--json", "--pack-destination", root], { cwd: repo, maxBuffer: 16 << 20 });
    const [{ filename, files }] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    expect(files.map((f) => f.path)).toEqual(expect.arrayContaining(["dist/src/index.js", "dist/src/index.d.ts", "dist/src/edge/hono.d.ts", "bin/akadze.js"]));
    expect(files.some((f) => f.path.startsWith("src/") || f.path.startsWith("test/"))).toBe(false);
    // The docs travel with the package: every relative link of a packed page (the README's to docs/*.md
    // and bench/, theirs to each other and to the screenshot) names a packed file.
    const inTarball = new Set(files.map((f) => f.path));
    expect(inTarball).toContain("docs/README.md");
    const broken = [...inTarball].filter((file) => file.endsWith(".md")).flatMap((file) =>
      [...readFileSync(join(repo, file), "utf8").matchAll(/\]\(([^)\s#]+)(?:#[^)]*)?\)/g)].map((m) => m[1])
        .filter((link) => !/^[a-z]+:/i.test(link))
        .map((link) => posix.normalize(posix.join(posix.dirname(file), link)))
        .filter((target) => !inTarball.has(target))
        .map((target) => `${file} -> ${target}`));
    expect(broken).toEqual([]);

    writeFileSync(join(project, "package.json"), `${JSON.stringify({ name: "existing-app", private: true, type: "module" }, null, 2)}\n`);
    writeFileSync(join(project, ".gitignore"), "node_modules\n");
    const installed = await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", join(root, filename),
      `tsx@${own.devDependencies.tsx}`, `typescript@${own.devDependencies.typescript}`, `@types/node@${own.devDependencies["@types/node"]}`],
    { cwd: project, maxBuffer: 16 << 20 });
    expect(installed.stderr).not.toMatch(/akadze.*(install|prepare)/i); // no install script of ours
    // The compiled dashboard imports hono's JSX runtime and carries no @jsxImportSource pragma, which
    // esbuild (wrangler's bundler) warns about in every build of a Worker that includes it.
    for (const page of ["index", "jobs", "layout", "overview"]) {
      const compiled = readFileSync(join(project, `node_modules/akadze/dist/src/edge/dashboard/${page}.js`), "utf8");
      expect(compiled).toContain('from "hono/jsx/jsx-runtime"');
      expect(compiled).not.toContain("@jsxImportSource");
    }
    const manifest = JSON.parse(readFileSync(join(project, "node_modules/akadze/package.json"), "utf8"));
    expect(manifest.scripts?.prepare).toBeUndefined();

    const bin = join(project, "node_modules/.bin/akadze");
    const init = await run(bin, ["init"], { cwd: project });
    for (const file of ["akadze/app.ts", "akadze/cloudflare.ts", "api/akadze.ts", "wrangler.toml", "vercel.json", ".dev.vars"]) {
      expect(init.stdout).toMatch(new RegExp(`created\\s+${file.replace(".", "\\.")}`));
      expect(existsSync(join(project, file))).toBe(true);
    }
    expect(readFileSync(join(project, "wrangler.toml"), "utf8")).toMatch(/^minify = true$/m);
    expect(readFileSync(join(project, ".gitignore"), "utf8")).toBe("node_modules\n.akadze/\n.dev.vars\n");
    expect(JSON.parse(readFileSync(join(project, "package.json"), "utf8")).akadze).toEqual({ app: "./akadze/app.ts" });
    expect(JSON.parse(readFileSync(join(project, "vercel.json"), "utf8")).crons).toEqual([{ path: "/api/akadze/work", schedule: "* * * * *" }]);
    // A second run changes nothing.
    expect((await run(bin, ["init"], { cwd: project })).stdout).not.toMatch(/^created/m);

    // The tsconfig init wrote (the project had none) type-checks the scaffold.
    expect(init.stdout).toMatch(/created\s+tsconfig\.json/);
    await run(process.execPath, [join(project, "node_modules/typescript/bin/tsc"), "-p", "."], { cwd: project }).catch((error) => {
      throw new Error(`the scaffolded app does not type-check against the installed akadze:\n${error.stdout}`);
    });

    const env = { ...process.env, DATABASE_URL: urlFor(DATABASE) };
    expect((await run(bin, ["migrate"], { cwd: project, env })).stdout).toMatch(/^applied 0000_init/);

    writeFileSync(join(project, "check.ts"), CHECK);
    const checked = await run(process.execPath, ["--import", "tsx", "check.ts"], { cwd: project, env });
    const result = JSON.parse(/^RESULT (.*)$/m.exec(checked.stdout)![1]);
    expect(result).toEqual({
      routed: 202,
      work: 200,
      jobs: ["route", "cron", "vercel"].map((name) => ["succeeded", { greeting: `hello, ${name}`, attempt: 1 }]),
    });
  }, 480_000);

  /** One statement on the test database, on a connection of its own. */
  async function sqlOnce<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: urlFor(DATABASE) });
    await client.connect();
    try { return await fn(client); } finally { await client.end(); }
  }

  /** Starts `akadze worker` (app from package.json or probe.ts) in `cwd`, enqueues a probe job, and waits for its outcome. */
  async function probeWorker(cwd: string, bin: string): Promise<{ state: string; result: unknown; errors: unknown[] }> {
    writeFileSync(join(cwd, "probe.ts"), PROBE);
    const id = await sqlOnce((client) => createApp().task("probe", async () => {}).using(drizzle(client) as unknown as Db).enqueue({}));
    const { child, stdout, stderr, exited } = startAkadze(["worker", "probe.ts"], { bin, cwd, env: { DATABASE_URL: urlFor(DATABASE) } });
    children.push(child);
    const job = () => sqlOnce(async (client) => (await client.query("select state, result, errors from akadze.all_jobs where id = $1", [id])).rows[0]);
    try {
      await waitFor(async () => { const j = await job(); return j.state !== "queued" && j.state !== "running" || j.errors.length > 0; }, "the probe job", { timeoutMs: 60_000 });
    } catch (error) {
      throw new Error(`${(error as Error).message}; worker output:\n${stdout()}${stderr()}`);
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
    return job();
  }

  it("in a CommonJS package from `npm init -y`, init makes it an ES module package and akadze worker runs the scaffolded app", async () => {
    const cjs = join(root, "cjs");
    mkdirSync(cjs);
    await run("npm", ["init", "-y"], { cwd: cjs });
    expect(JSON.parse(readFileSync(join(cjs, "package.json"), "utf8")).type).toBe("commonjs");
    symlinkSync(join(project, "node_modules"), join(cjs, "node_modules"), "dir"); // the tarball install of the first test
    const bin = join(cjs, "node_modules/akadze/bin/akadze.js");
    expect((await run(process.execPath, [bin, "init"], { cwd: cjs })).stdout).toMatch(/updated\s+package\.json .*"type": "module" \(was "type": "commonjs"\)/);
    const id = await sqlOnce((client) => createApp().task("greet", async () => {}).using(drizzle(client) as unknown as Db).enqueue({ name: "cjs" }));
    const { child, stdout, stderr, exited } = startAkadze(["worker"], { bin, cwd: cjs, env: { DATABASE_URL: urlFor(DATABASE) } });
    children.push(child);
    const job = () => sqlOnce(async (client) => (await client.query("select state, result from akadze.all_jobs where id = $1", [id])).rows[0]);
    try {
      await waitFor(async () => (await job()).state === "succeeded" || child.exitCode !== null, "the greet job", { timeoutMs: 60_000 });
      expect({ job: await job(), stderr: stderr() }).toMatchObject({ job: { state: "succeeded", result: { greeting: "hello, cjs", attempt: 1 } } });
    } catch (error) {
      throw new Error(`${(error as Error).message}; worker output:\n${stdout()}${stderr()}`);
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
  }, 120_000);

  it("akadze worker from the installed tarball shares one akadze with the app", async () => {
    expect(await probeWorker(project, join(project, "node_modules/akadze/bin/akadze.js"))).toMatchObject({ state: "succeeded", errors: [] });
  }, 120_000);

  it("akadze worker from a linked checkout (npm link, npm install ../akadze) shares one akadze with the app", async () => {
    const linked = join(root, "linked");
    mkdirSync(join(linked, "node_modules"), { recursive: true });
    writeFileSync(join(linked, "package.json"), JSON.stringify({ name: "linked-app", private: true, type: "module", akadze: { app: "./probe.ts" } }));
    symlinkSync(repo, join(linked, "node_modules/akadze"), "dir"); // what npm link and a directory install create
    expect(await probeWorker(linked, join(linked, "node_modules/akadze/bin/akadze.js"))).toMatchObject({ state: "succeeded", errors: [] });
  }, 120_000);
});
