// The real `akadze` binary (node bin/akadze.js) against real Postgres: output and exit code of every
// command, and one clear stderr line with a non-zero exit for every kind of bad input.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import pg from "pg";
import { createApp, runOnce, setLimit } from "../../src/index.js";
import { app, doomed, echo, flaky } from "../fixtures/worker-app.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { CLI_TEST_TIMEOUT_MS, runAkadze, type CliRun } from "../support/cli.js";
import { ADMIN_URL, urlFor } from "../support/postgres.js";
import { startNeonEndpoint } from "../../src/dev/neon-endpoint.js";

// Each test spawns the CLI (tsx start-up each time): its timeout allows for that on a loaded machine.
vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

let t: TestDatabase;
const EMPTY_DB = `akadze_ops_cli_empty_${process.pid}`;

/** Runs `akadze ...args` with DATABASE_URL pointing at this file's database unless `env` says otherwise. */
function akadze(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  return runAkadze(args, { DATABASE_URL: t.url, ...env });
}

/** A failure must be exactly one line on stderr, naming the problem, with no stack trace. */
function expectOneLineError(run: CliRun, code: number, pattern: RegExp): void {
  expect({ code: run.code, stdout: run.stdout }).toEqual({ code, stdout: "" });
  expect(run.stderr.endsWith("\n")).toBe(true);
  expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(run.stderr).toMatch(/^akadze: /);
  expect(run.stderr).not.toMatch(/\n\s+at /);
  expect(run.stderr).toMatch(pattern);
}

let ids: { echo: number[]; flaky: number; doomed: number; queued: number };

beforeAll(async () => {
  t = await openTestDatabase("ops_cli");
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`drop database if exists ${EMPTY_DB}`);
  await admin.query(`create database ${EMPTY_DB}`);
  await admin.end();
  // Two echo jobs succeed, flaky fails after two attempts, doomed fails at once; one more echo stays queued.
  const echoes = await echo.using(t.db).enqueueMany([{ text: "hello" }, { text: "world" }]);
  const flakyId = await flaky.using(t.db).enqueue({});
  const doomedId = await doomed.using(t.db).enqueue({});
  await runOnce(app, { db: t.db });
  await runOnce(app, { db: t.db });
  const queued = await echo.using(t.db, { delay: "1h" }).enqueue({ text: "later" });
  ids = { echo: echoes, flaky: flakyId, doomed: doomedId, queued };
});

afterAll(async () => {
  await t?.close();
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`drop database if exists ${EMPTY_DB} with (force)`);
  await admin.end();
});

describe("akadze", () => {
  it("has --help at every level", async () => {
    const runs = await Promise.all([["--help"], ["limits", "set", "--help"]].map((a) => akadze(a)));
    for (const run of runs) expect(run).toMatchObject({ code: 0, stderr: "" });
    expect(runs[0].stdout).toMatch(/Usage: akadze \[options\] \[command\]/);
    for (const command of ["migrate", "worker", "dev", "jobs", "workers", "limits", "fair", "queues", "schedules", "metrics", "beat"]) {
      expect(runs[0].stdout).toMatch(new RegExp(`^  ${command}\\b`, "m"));
    }
    expect(runs[1].stdout).toMatch(/^Usage: akadze limits set \[options\] <key>[\s\S]*--max-starts <n>[\s\S]*--window <duration>[\s\S]*--max-running <n>[\s\S]*Global Options:[\s\S]*--database/);
  });

  it("migrate reports a migrated database as up to date", async () => {
    const run = await akadze(["migrate"]);
    expect(run).toMatchObject({ code: 0, stderr: "" });
    expect(run.stdout).toMatch(/^postgres:\/\/postgres@.*\/akadze_ops_cli_\w+ is up to date\n$/);
  });

  it("migrate creates the tables in a fresh PGlite directory that the other commands then read", async () => {
    const dir = mkdtempSync(join(tmpdir(), "akadze-ops-pglite-"));
    try {
      const migrated = await akadze(["--database", dir, "migrate"]);
      expect(migrated).toMatchObject({ code: 0, stderr: "" });
      expect(migrated.stdout).toMatch(/^applied 0000_init, 0001_functions, .* to \/.*akadze-ops-pglite-/);
      const listed = await akadze(["--database", dir, "queues", "list", "--json"]);
      expect(listed).toMatchObject({ code: 0, stdout: "[]\n", stderr: "" });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, CLI_TEST_TIMEOUT_MS + 60_000); // PGlite starts an embedded Postgres in each of the two processes

  it("jobs list shows the newest jobs first, filtered by status, queue and task, and --json for scripts", async () => {
    const [table, filtered] = await Promise.all([
      akadze(["jobs", "list"]),
      akadze(["jobs", "list", "--status", "succeeded", "--queue", "default", "--task", "fixture.echo", "--limit", "1", "--json"]),
    ]);
    expect(table).toMatchObject({ code: 0, stderr: "" });
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+TASK\s+QUEUE\s+STATE\s+ATTEMPT\s+RUN AT\s+CREATED\s+FINISHED$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 5))).toEqual([
      [String(ids.queued), "fixture.echo", "default", "queued", "0/3"],
      [String(ids.doomed), "fixture.doomed", "reports", "failed", "1/3"],
      [String(ids.flaky), "fixture.flaky", "default", "failed", "2/2"],
      [String(ids.echo[1]), "fixture.echo", "default", "succeeded", "1/3"],
      [String(ids.echo[0]), "fixture.echo", "default", "succeeded", "1/3"],
    ]);
    expect(JSON.parse(filtered.stdout)).toEqual([expect.objectContaining({ id: ids.echo[1], task: "fixture.echo", state: "succeeded", attempt: 1, maxAttempts: 3 })]);
  });

  it("--http reaches the database over Neon's SQL-over-HTTP protocol", async () => {
    const endpoint = await startNeonEndpoint({ connectionString: t.url });
    try {
      const url = `postgres://postgres@127.0.0.1:${endpoint.port}/${new URL(t.url).pathname.slice(1)}`;
      const listed = await akadze(["--http", "--neon-endpoint", endpoint.fetchEndpoint, "jobs", "list", "--status", "failed", "--json"], { DATABASE_URL: url });
      expect(listed).toMatchObject({ code: 0, stderr: "" });
      expect(JSON.parse(listed.stdout).map((j: { id: number }) => j.id)).toEqual([ids.doomed, ids.flaky]);
      expect(endpoint.stats.requests).toBeGreaterThan(0);
    } finally {
      await endpoint.close();
    }
  });

  it("jobs show prints the args, result, errors history and timings of a job", async () => {
    const [failed, succeeded] = await Promise.all([akadze(["jobs", "show", String(ids.flaky)]), akadze(["jobs", "show", String(ids.echo[0]), "--json"])]);
    expect(failed).toMatchObject({ code: 0, stderr: "" });
    expect(failed.stdout).toMatch(/^id\s+\d+\ntask\s+fixture\.flaky\nqueue\s+default\nstate\s+failed\nattempt\s+2 of 2\n/);
    expect(failed.stdout).toMatch(/^args\s+\{\}$/m);
    expect(failed.stdout).toMatch(/^started\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/m);
    expect(failed.stdout).toMatch(/^ran for\s+\d+ms$/m);
    expect(failed.stdout).toMatch(/errors \(2\):\nATTEMPT\s+AT\s+KIND\s+MESSAGE\n1\s+.+UTC\s+Error\s+flaky failure on attempt 1\n2\s+.+UTC\s+Error\s+flaky failure on attempt 2\n$/);
    const job = JSON.parse(succeeded.stdout);
    expect(job).toMatchObject({ id: ids.echo[0], state: "succeeded", args: { text: "hello" }, result: { echoed: "hello" }, errors: [] });
    expect(new Date(job.finishedAt).getTime()).toBeGreaterThanOrEqual(new Date(job.startedAt).getTime());
  });

  it("jobs cancel cancels a queued job, and exits 1 with `job is not active` for a finished or unknown one", async () => {
    const id = await echo.using(t.db, { delay: "1h" }).enqueue({ text: "cancel me" });
    const cancelled = await akadze(["jobs", "cancel", String(id)]);
    expect(cancelled).toMatchObject({ code: 0, stdout: `job ${id}: cancelled\n`, stderr: "" });
    const [again, unknown] = await Promise.all([akadze(["jobs", "cancel", String(id)]), akadze(["jobs", "cancel", "987654"])]);
    expectOneLineError(again, 1, /^akadze: job is not active \(job \d+ is cancelled\)$/m);
    expectOneLineError(unknown, 1, /^akadze: job is not active \(no job 987654\)$/m);
  });

  it("jobs cancel --app reports the change to the app's onTransition hooks, in the change's transaction", async () => {
    const id = await echo.using(t.db, { delay: "1h" }).enqueue({ text: "hooked" });
    const cancelled = await akadze(["jobs", "cancel", String(id), "--app", "test/fixtures/hooked-app.ts"]);
    expect(cancelled).toMatchObject({ code: 0, stdout: `job ${id}: cancelled\n`, stderr: "" });
    expect(await t.rows("select job_id::int as id, change from fixture_transitions")).toEqual([{ id, change: "queued -> cancelled" }]);
  });

  it("jobs requeue moves a failed job back to queued and exits 1 for any other job; an unknown id exits 1", async () => {
    const requeued = await akadze(["jobs", "requeue", String(ids.doomed), "--json"]);
    expect(requeued).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(requeued.stdout)).toEqual({ id: ids.doomed, state: "queued" });
    expect(await t.rows("select state, attempt, max_attempts from akadze.all_jobs where id = $1", [ids.doomed])).toEqual([{ state: "queued", attempt: 1, max_attempts: 3 }]);
    const [succeeded, unknown] = await Promise.all([akadze(["jobs", "requeue", String(ids.echo[0])]), akadze(["jobs", "show", "987654"])]);
    expectOneLineError(succeeded, 1, /job \d+ is succeeded: only failed jobs can be requeued/);
    expectOneLineError(unknown, 1, /^akadze: no job 987654$/m);
  });

  it("limits set, list and delete a limit", async () => {
    const set = await akadze(["limits", "set", "vendor", "--max-starts", "10", "--window", "1m", "--max-running", "3"]);
    expect(set).toMatchObject({ code: 0, stdout: "limit vendor: 10 starts per 1m, 3 running\n", stderr: "" });
    const table = await akadze(["limits", "list"]);
    expect(table.stdout).toBe("KEY     MAX STARTS  STARTS IN WINDOW  MAX RUNNING  RUNNING\nvendor  10/1m       0                 3            0\n");
    const deleted = await akadze(["limits", "delete", "vendor"]);
    expect(deleted).toMatchObject({ code: 0, stdout: "limit vendor: deleted\n" });
    expectOneLineError(await akadze(["limits", "delete", "vendor"]), 1, /^akadze: no limit "vendor"$/m);
    expect(await t.rows("select * from akadze.limits")).toEqual([]);
  });

  it("fair set and list a tenant's weight; weight 1 takes it back to the default", async () => {
    expect(await akadze(["fair", "list"])).toMatchObject({ code: 0, stdout: "every tenant weighs 1\n" });
    expect(await akadze(["fair", "set", "acme", "3"])).toMatchObject({ code: 0, stdout: "fair acme: weight 3\n", stderr: "" });
    expect((await akadze(["fair", "list"])).stdout).toBe("KEY   WEIGHT\nacme  3\n");
    expect(JSON.parse((await akadze(["fair", "list", "--json"])).stdout)).toEqual([{ key: "acme", weight: 3 }]);
    expect(await akadze(["fair", "set", "acme", "1"])).toMatchObject({ code: 0, stdout: "fair acme: weight 1\n" });
    expect(await t.rows("select * from akadze.fair_weights")).toEqual([]);
  });

  it("queues pause, list and resume a queue", async () => {
    const paused = await akadze(["queues", "pause", "reports"]);
    expect(paused).toMatchObject({ code: 0, stdout: "queue reports: paused\n", stderr: "" });
    const listed = await akadze(["queues", "list"]);
    expect(listed.stdout).toMatch(/^QUEUE\s+PAUSED\s+DUE\s+SCHEDULED\s+RUNNING\s+CLAIMED\s+SUCCEEDED\s+FAILED\s+CANCELLED\s+RATE LIMITED\s+OLDEST DUE\n/);
    expect(listed.stdout).toMatch(/^reports\s+yes\s/m);
    expect(listed.stdout).toMatch(/^default\s+no\s+0\s+\d+\s+0\s+0\s+2\s+1\s/m);
    const resumed = await akadze(["queues", "resume", "reports", "--json"]);
    expect(JSON.parse(resumed.stdout)).toEqual({ queue: "reports", paused: false });
  });

  it("workers list shows the invocations that ran", async () => {
    const table = await akadze(["workers", "list"]);
    expect(table).toMatchObject({ code: 0, stderr: "" });
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID\s+KIND\s+STATUS\s+QUEUES\s+RUNNING\s+JOBS DONE\s+STARTED\s+LAST SEEN\s+STOPPED\s+STARTED BY$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(1, 6)).sort()).toEqual([
      ["invocation", "stopped", "*", "0", "1"], ["invocation", "stopped", "*", "0", "4"]]);
  });

  it("schedules list reads what invocations recorded in akadze.schedules", async () => {
    const empty = await akadze(["schedules", "list"]);
    expect(empty).toMatchObject({ code: 0, stdout: expect.stringMatching(/^no schedules recorded yet/) });
    await t.rows(`insert into akadze.schedules (name, task, last_slot) values ('nightly', 'fixture.echo', now() - interval '2 hours')`);
    const table = await akadze(["schedules", "list"]);
    expect(table.stdout).toMatch(/^NAME\s+TASK\s+KIND\s+TENANT\s+SCHEDULE\s+POLICY\s+PAUSED\s+LAST SLOT\s+NEXT SLOT\s+SEEN\n/);
    expect(table.stdout).toMatch(/\nnightly\s+fixture\.echo\s+code\s+-\s+-\s+latest\s+no\s+2h ago\s+-\s+(now|\d+s ago)\n$/);
    await t.rows(`delete from akadze.schedules`);
  });

  it("schedules create, update, pause, resume, list per tenant and delete a runtime schedule; bad input is one line and stores nothing", async () => {
    const app = ["--app", "test/fixtures/worker-app.ts"];
    const created = await akadze(["schedules", "create", "t1.echo", "--task", "fixture.echo", "--cron", "0 9 * * *", "--timezone", "Europe/Berlin",
      "--args", '{"text":"hi"}', "--tenant", "t1", "--catch-up", "3", ...app]);
    expect(created).toMatchObject({ code: 0, stderr: "", stdout: expect.stringMatching(/^schedule t1\.echo: fixture\.echo cron "0 9 \* \* \*" Europe\/Berlin, next slot \d{4}-/) });
    expectOneLineError(await akadze(["schedules", "create", "t1.echo", "--task", "fixture.echo", "--every", "5m", "--args", '{"text":"x"}', ...app]), 2, /already exists/);
    expectOneLineError(await akadze(["schedules", "create", "bad", "--task", "fixture.echo", "--every", "5m", "--args", '{"text":7}', ...app]), 2, /Invalid args of schedule "bad"/);
    expectOneLineError(await akadze(["schedules", "create", "bad", "--task", "nope", "--every", "5m", ...app]), 2, /task "nope", which is not registered/);
    expectOneLineError(await akadze(["schedules", "create", "bad", "--task", "fixture.echo", ...app]), 2, /give either --cron or --every/);
    expectOneLineError(await akadze(["schedules", "create", "bad", "--task", "fixture.echo", "--every", "5m", "--catch-up", "all", ...app]), 2, /--catch-up/);
    const updated = await akadze(["schedules", "update", "t1.echo", "--every", "1h", "--overlap", "skip", "--catch-up", "latest", "--json", ...app]);
    expect(JSON.parse(updated.stdout)).toMatchObject({ name: "t1.echo", cron: null, everyMs: 3_600_000, catchUp: "latest", overlap: "skip", tenant: "t1" });
    expect(await akadze(["schedules", "pause", "t1.echo"])).toMatchObject({ code: 0, stdout: "schedule t1.echo: paused\n" });
    const listed = await akadze(["schedules", "list", "--tenant", "t1"]);
    expect(listed.stdout).toMatch(/\nt1\.echo\s+fixture\.echo\s+runtime\s+t1\s+every 3600000 ms\s+latest, skip overlap\s+yes\s+-\s+/);
    expect((await akadze(["schedules", "list", "--tenant", "t2"])).stdout).toBe("no schedules for tenant t2\n");
    expect(await akadze(["schedules", "resume", "t1.echo"])).toMatchObject({ code: 0, stdout: "schedule t1.echo: resumed\n" });
    expect(await akadze(["schedules", "delete", "t1.echo"])).toMatchObject({ code: 0, stdout: "schedule t1.echo: deleted\n" });
    expectOneLineError(await akadze(["schedules", "delete", "t1.echo"]), 1, /^akadze: no runtime schedule "t1.echo"$/m);
    expectOneLineError(await akadze(["schedules", "update", "t1.echo", "--every", "5m", ...app]), 1, /no runtime schedule "t1.echo"/);
    expect(await t.rows("select name from akadze.schedules")).toEqual([]);
  });

  it("metrics prints Prometheus text", async () => {
    const run = await akadze(["metrics"]);
    expect(run).toMatchObject({ code: 0, stderr: "" });
    const families = parsePrometheusTextFormat(run.stdout);
    const jobs = families.find((f) => f.name === "akadze_jobs")!;
    expect(jobs.type).toBe("GAUGE");
    expect(jobs.metrics).toContainEqual({ labels: { queue: "default", task: "fixture.echo", state: "succeeded" }, value: "2" });
  });

  it("jobs prune deletes finished jobs now, failed ones only when asked", async () => {
    const kept = await akadze(["jobs", "prune", "--older-than", "1d"]);
    expect(kept).toMatchObject({ code: 0, stdout: "deleted 0 succeeded/cancelled/rate_limited jobs\n", stderr: "" });
    const failed = await akadze(["jobs", "prune", "--only-failed", "--older-than", "0"]);
    expect(failed).toMatchObject({ code: 0, stdout: "deleted 1 failed job\n", stderr: "" });
    expect(await t.rows("select count(*)::int as n from akadze.all_jobs where state = 'failed'")).toEqual([{ n: 0 }]);
  });

  it("beat explains that schedules run inside every invocation", async () => {
    const run = await akadze(["beat"], { DATABASE_URL: undefined });
    expect(run).toMatchObject({ code: 0, stderr: "" });
    expect(run.stdout).toMatch(/no beat process[\s\S]*checked inside every invocation/);
  });

  it("bad input is one line on stderr and exit 2, and changes nothing", async () => {
    const before = await t.rows("select id, state from akadze.all_jobs order by id");
    const cases: [string[], RegExp, Record<string, string | undefined>?][] = [
      [["frobnicate"], /unknown command 'frobnicate'/],
      [["jobs", "list", "--bogus"], /unknown option '--bogus'/],
      [["jobs", "list", "--status", "done"], /argument 'done' is invalid\. Allowed choices are queued, running, succeeded, failed, cancelled/],
      [["jobs", "show", "abc"], /value 'abc' is invalid for argument 'id'\. a job id is a positive integer/],
      [["limits", "set", "k", "--window", "soon"], /expected a duration/],
      [["worker", "./no-such-app.ts"], /no such file: \.\/no-such-app\.ts/],
      [["worker", "test/support/database.ts"], /does not export an akadze app as "app" \(it exports openTestDatabase\)/],
      [["jobs", "list"], /no database: set DATABASE_URL or pass --database/, { DATABASE_URL: undefined }],
      [["limits", "set", "vendor", "--max-starts", "5"], /maxStarts and window go together/],
      [["--http", "jobs", "list"], /--http to 127\.0\.0\.1 needs the SQL-over-HTTP endpoint: pass --neon-endpoint/],
      [["jobs", "cancel", "9007199254740993"], /a job id is a positive integer no larger than 9007199254740991/],
      [["limits", "set", "k", "--max-running", "2000000"], /maxRunning must be at most 10000/],
      [["fair", "set", "acme", "2000"], /must be at most 1000/],
      [["fair", "set", "acme", "0"], /expected a positive integer/],
    ];
    const runs = await Promise.all(cases.map(([args, , env]) => akadze(args, env)));
    runs.forEach((run, i) => expectOneLineError(run, 2, cases[i][1]));
    expect(await t.rows("select id, state from akadze.all_jobs order by id")).toEqual(before);
  });

  it("an unreachable or unprepared database is one line on stderr and exit 1", async () => {
    const [refused, missing, bare, worker] = await Promise.all([
      akadze(["jobs", "list"], { DATABASE_URL: "postgres://postgres:secret@127.0.0.1:1/akadze" }),
      akadze(["queues", "list"], { DATABASE_URL: urlFor("akadze_ops_no_such_database") }),
      akadze(["jobs", "list"], { DATABASE_URL: urlFor(EMPTY_DB) }),
      akadze(["worker", "test/fixtures/worker-app.ts"], { DATABASE_URL: "postgres://postgres@127.0.0.1:1/akadze" }),
    ]);
    expectOneLineError(refused, 1, /^akadze: cannot reach the database at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/akadze: connection refused \(ECONNREFUSED\)$/m);
    expectOneLineError(missing, 1, /^akadze: database error: database "akadze_ops_no_such_database" does not exist$/m);
    expectOneLineError(bare, 1, /^akadze: akadze's tables are missing in this database: run `akadze migrate` first$/m);
    expectOneLineError(worker, 1, /cannot reach the database .*connection refused/);
  });

  // Last: it adds jobs the listings above do not expect.
  it("jobs list, jobs show and queues list show a job that ended rate_limited", async () => {
    let at = Date.parse("2026-06-01T12:00:00Z");
    const vendorApp = createApp({ clock: () => new Date(at) });
    const call = vendorApp.task("fixture.vendor", { queue: "vendor", limitWait: "5m" }, async () => {});
    await setLimit(t.db, "fixture-vendor", { maxStarts: 1, window: "1d" });
    const [, held] = await call.using(t.db, { limitKey: "fixture-vendor" }).enqueueMany([{}, {}]);
    await runOnce(vendorApp, { db: t.db });
    at += 6 * 60_000;
    expect(await runOnce(vendorApp, { db: t.db })).toMatchObject({ rateLimited: 1 });
    const [listed, shown, queues] = await Promise.all([
      akadze(["jobs", "list", "--status", "rate_limited", "--json"]),
      akadze(["jobs", "show", String(held)]),
      akadze(["queues", "list", "--json"]),
    ]);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ id: held, task: "fixture.vendor", state: "rate_limited", attempt: 0 })]);
    expect(shown.stdout).toMatch(/state\s+rate_limited/);
    expect(shown.stdout).toMatch(/limit wait\s+5m/);
    expect(JSON.parse(queues.stdout)).toContainEqual(expect.objectContaining({ queue: "vendor", succeeded: 1, rateLimited: 1 }));
  });
});

describe("a job's progress and log in jobs show", () => {
  it("jobs show prints the job's last progress and its log lines with their attempts, and --json has them too", async () => {
    const reporting = createApp();
    const task = reporting.task("fixture.reporting", { queue: "reporting" }, async (_args, job) => {
      job.log("fetched", 3, "pages");
      job.progress({ pages: 3, of: 3 });
      job.log("done");
    });
    const id = await task.using(t.db).enqueue({});
    await runOnce(reporting, { db: t.db, queues: ["reporting"] });
    const [shown, json] = await Promise.all([akadze(["jobs", "show", String(id)]), akadze(["jobs", "show", String(id), "--json"])]);
    expect(shown).toMatchObject({ code: 0, stderr: "" });
    expect(shown.stdout).toMatch(/^progress\s+\{"of":3,"pages":3\} \(at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC\)$/m);
    expect(shown.stdout).toMatch(/log \(2 lines\):\nATTEMPT\s+AT\s+MESSAGE\n1\s+.+UTC\s+fetched 3 pages\n1\s+.+UTC\s+done\n/);
    expect(JSON.parse(json.stdout)).toMatchObject({ progress: { pages: 3, of: 3 }, logs: [{ attempt: 1, message: "fetched 3 pages" }, { attempt: 1, message: "done" }], logsDropped: 0 });
  });
});
