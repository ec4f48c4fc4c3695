// The CLI says what used to pass silently: a paused queue that has no jobs, queued jobs of tasks the app
// does not define, and each failed job of a running worker with its error.
import { afterAll, beforeAll, beforeEach, expect, it, vi } from "vitest";
import { createApp } from "../../src/index.js";
import { doomed } from "../fixtures/worker-app.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { CLI_START_TIMEOUT_MS, CLI_TEST_TIMEOUT_MS, runAkadze, startAkadze } from "../support/cli.js";
import { waitFor } from "../support/wait-for.js";

// Each test spawns the CLI (tsx start-up each time): its timeout allows for that on a loaded machine.
vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

const APP = "test/fixtures/worker-app.ts";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("cli_newcomer"); });
afterAll(async () => { await t?.close(); });
// Before each test, not after: a test that failed half way must not leave a paused queue to the next.
beforeEach(async () => { await t.reset(); });

const akadze = (args: string[]) => runAkadze(args, { DATABASE_URL: t.url });

it("pausing a queue that has no jobs works but says so; a queue with jobs pauses quietly", async () => {
  await doomed.using(t.db).enqueue({});
  const [typo, real] = await Promise.all([akadze(["queues", "pause", "reprots"]), akadze(["queues", "pause", "reports"])]);
  expect(typo).toEqual({ code: 0, stdout: "queue reprots: paused\n", stderr: "akadze: queue reprots has no jobs yet: paused anyway; check the name with `akadze queues list`\n" });
  expect(real).toEqual({ code: 0, stdout: "queue reports: paused\n", stderr: "" });
});

it("jobs unknown lists queued jobs of tasks the app does not define", async () => {
  await createApp().task("fixture.ecko", async () => {}).using(t.db).enqueueMany([{}, {}, {}]);
  const listed = await akadze(["jobs", "unknown", APP, "--json"]);
  expect(listed.stderr).toBe("");
  expect(JSON.parse(listed.stdout)).toEqual([{ task: "fixture.ecko", queue: "default", jobs: 3 }]);
  await t.reset();
  expect((await akadze(["jobs", "unknown", APP])).stdout).toBe("every queued job's task is defined by this app\n");
});

it("akadze worker warns about unknown tasks at start and logs each failed job with its error", async () => {
  await createApp().task("fixture.ecko", async () => {}).using(t.db).enqueue({});
  const id = await doomed.using(t.db).enqueue({});
  const { child, stdout, stderr: output, exited } = startAkadze(["worker", APP, "--queue", "reports", "--log-level", "info"], { env: { DATABASE_URL: t.url } });
  try {
    await waitFor(async () => output().includes(`job ${id} `) && stdout().includes(" worker on "), "the failed job's log lines", { timeoutMs: CLI_START_TIMEOUT_MS });
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
  const stderr = output();
  // Each line starts with its time (a worker runs for days), and the invocation line names the driver.
  const at = String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z`;
  expect(stderr).toMatch(new RegExp(`^${at} akadze: 1 queued job of task "fixture\\.ecko" \\(queue default\\) wait for an app that defines it`, "m"));
  expect(stderr).toMatch(new RegExp(`^${at} akadze: job ${id} \\(fixture\\.doomed, queue reports, attempt 1\\) failed: Fail: the vendor rejected the export\n`, "m"));
  expect(stdout()).toMatch(new RegExp(`^${at} worker on node-postgres: claimed 1[ ,(]`, "m"));
});

it("akadze worker --log-level silent says nothing about unknown tasks or failed jobs", async () => {
  await createApp().task("fixture.ecko", async () => {}).using(t.db).enqueue({});
  const id = await doomed.using(t.db).enqueue({});
  const { child, stderr: output, exited } = startAkadze(["worker", APP, "--queue", "reports", "--log-level", "silent"], { env: { DATABASE_URL: t.url } });
  try {
    await waitFor(async () => (await t.rows(`select state from akadze.all_jobs where id = ${id}`))[0]?.state === "failed", "the doomed job to fail", { timeoutMs: CLI_START_TIMEOUT_MS });
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
  expect(output()).not.toContain("fixture.ecko");
  expect(output()).not.toContain(`job ${id} `);
});
