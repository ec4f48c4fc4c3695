// `akadze jobs cancel|requeue|replay` over a selection, and `jobs replay ID --args`, through the real binary against real Postgres.
import { afterAll, beforeAll, beforeEach, expect, it, vi } from "vitest";
import { runOnce } from "../../src/index.js";
import { app, doomed, echo } from "../fixtures/worker-app.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { CLI_TEST_TIMEOUT_MS, runAkadze, type CliRun } from "../support/cli.js";

// Each test spawns the CLI (tsx start-up each time): its timeout allows for that on a loaded machine.
vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

let t: TestDatabase;
const akadze = (args: string[]): Promise<CliRun> => runAkadze(args, { DATABASE_URL: t.url });
const states = () => t.rows<{ id: number; state: string }>("select id::int, state from akadze.all_jobs order by id");

beforeAll(async () => { t = await openTestDatabase("bulk_cli"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });
// Each command is a process of its own (each with its 60 s deadline); a loaded machine starts them slowly.
const SPAWNS = 300_000;

it("jobs cancel with a selection counts with --dry-run, then cancels exactly the selected jobs", async () => {
  const [seven, eight] = await echo.using(t.db, { delay: "1h" }).enqueueMany([{ text: "seven" }, { text: "eight" }]);
  const other = await doomed.using(t.db, { delay: "1h" }).enqueue({});
  const selection = ["--task", "fixture.echo", "--state", "queued", "--args-match", '{"text":"seven"}'];
  const dry = await akadze(["jobs", "cancel", ...selection, "--dry-run"]);
  expect(dry).toMatchObject({ code: 0, stdout: "would cancel or ask to stop 1 job (dry run: nothing changed)\n", stderr: "" });
  expect((await states()).map((j) => j.state)).toEqual(["queued", "queued", "queued"]);
  const done = await akadze(["jobs", "cancel", ...selection, "--json"]);
  expect(done).toMatchObject({ code: 0, stderr: "" });
  expect(JSON.parse(done.stdout)).toEqual({ count: 1, dryRun: false });
  expect(await states()).toEqual([{ id: seven, state: "cancelled" }, { id: eight, state: "queued" }, { id: other, state: "queued" }]);
}, SPAWNS);

it("jobs requeue and jobs replay with a selection; jobs replay ID --args makes a new job that shows its origin", async () => {
  const failed = await doomed.using(t.db).enqueue({});
  const echoed = await echo.using(t.db).enqueue({ text: "hi" });
  await runOnce(app, { db: t.db });
  const requeued = await akadze(["jobs", "requeue", "--task", "fixture.doomed"]);
  expect(requeued).toMatchObject({ code: 0, stdout: "requeued 1 job\n", stderr: "" });
  await runOnce(app, { db: t.db });
  const replayedAll = await akadze(["jobs", "replay", "--state", "failed", "--dry-run"]);
  expect(replayedAll).toMatchObject({ code: 0, stdout: "would replay 1 job (dry run: nothing changed)\n" });

  const replayed = await akadze(["jobs", "replay", String(echoed), "--args", '{"text":"again"}', "--app", "test/fixtures/worker-app.ts", "--json"]);
  expect(replayed).toMatchObject({ code: 0, stderr: "" });
  const { replayedAs } = JSON.parse(replayed.stdout);
  expect(await t.rows("select task, state, args from akadze.all_jobs where id = $1", [replayedAs])).toEqual([{ task: "fixture.echo", state: "queued", args: { text: "again" } }]);
  const shown = await akadze(["jobs", "show", String(replayedAs)]);
  expect(shown.stdout).toMatch(new RegExp(`replay of\\s+job ${echoed}`));
  expect(failed).toBeLessThan(echoed);
}, SPAWNS);

it("bad selections and a job id with a selection are one line on stderr and exit 2, and change nothing", async () => {
  const done = await echo.using(t.db).enqueue({ text: "x" });
  await runOnce(app, { db: t.db });
  await echo.using(t.db, { delay: "1h" }).enqueue({ text: "y" });
  const before = await states();
  const cases: [string[], RegExp][] = [
    [["jobs", "cancel"], /give a job id, or select jobs with --task/],
    [["jobs", "cancel", "1", "--task", "fixture.echo"], /give a job id or a selection .*not both/],
    [["jobs", "cancel", "--state", "failed"], /acts on queued, running jobs, not failed/],
    [["jobs", "cancel", "--task", "fixture.echo", "--args-match", "[1]"], /expected a JSON object/],
    [["jobs", "requeue", "--older-than", "soon"], /expected a duration/],
    [["jobs", "replay", String(done), "--args", '{"text":5}', "--app", "test/fixtures/worker-app.ts"], /Invalid args for task fixture\.echo/],
    [["jobs", "replay", "--task", "fixture.echo", "--args", "{}"], /--args is for one job id/],
  ];
  // One at a time: seven processes at once on a loaded machine could outlast each one's deadline.
  const runs: CliRun[] = [];
  for (const [args] of cases) runs.push(await akadze(args));
  runs.forEach((run, i) => {
    expect({ code: run.code, stdout: run.stdout }, cases[i][0].join(" ")).toEqual({ code: 2, stdout: "" });
    expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(run.stderr).toMatch(cases[i][1]);
  });
  expect(await states()).toEqual(before);
}, SPAWNS);
