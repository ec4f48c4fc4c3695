// Skewed clocks (issue 11, item 8): eight invocation loops, each in its own process on a clock up to ±3 s off the
// database's, with a 4 s lease, run every job exactly once, never breach maxRunning or maxStarts, and enqueue every
// schedule slot once.
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { setLimit, type Db } from "../../../src/index.js";
import { startNeonEndpoint, type NeonEndpoint } from "../../../src/dev/neon-endpoint.js";
import { createTestDatabase } from "../../support/postgres.js";
import { busiestWindow } from "../../support/busiest-window.js";
import { waitFor, within } from "../../support/wait-for.js";
import { bundleFixtures, type BundledFixtures } from "../../support/bundle.js";
import { CREATE_SKEW_RUNS, MAX_RUNNING, MAX_STARTS, RUNNING_KEY, STARTS_KEY, WINDOW_MS, skewApp } from "../../fixtures/skew-app.js";

// The clock is set off by test/fixtures/skewed-clock.ts; the handlers measure it: each body writes a row with the
// database's clock_timestamp() (test/fixtures/skew-app.ts).

const fixture = (name: string) => fileURLToPath(new URL(`../../fixtures/${name}`, import.meta.url));
/**
 * The loop and the clock preload, bundled once for the file (test/support/bundle.ts): eight tsx start-ups took
 * tens of seconds of the test's time beside another suite on 2 cores.
 */
let bundled: BundledFixtures;

/** The eight loops: how far each one's clock is off the database's, and how it runs. */
const LOOPS = [
  { skewMs: -3000, loop: "runOnce" }, { skewMs: 3000, loop: "runWorker" },
  { skewMs: -2200, loop: "runWorker" }, { skewMs: 2200, loop: "runOnce" },
  { skewMs: -1400, loop: "runOnce" }, { skewMs: 1400, loop: "runOnce" },
  { skewMs: -600, loop: "runOnce" }, { skewMs: 600, loop: "runWorker" },
] as const;

/** Schedule slots the loops must have enqueued (and run) before they are stopped. */
const MIN_SLOTS = 5;

interface Totals { invocations: number; claimed: number; succeeded: number; recovered: number; lost: number; released: number; failed: number; errors: string[] }

interface Loop {
  child: ChildProcess;
  /** The loop's clock minus the database's, as the loop measured it. */
  ready: Promise<number>;
  done: Promise<Totals>;
  exited: Promise<void>;
}

function startLoop(env: Record<string, string>): Loop {
  const child = spawn(process.execPath, ["--import", pathToFileURL(bundled.path("skewed-clock")).href, bundled.path("skew-loop")], {
    env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe", "ipc"],
  });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => { stderr += chunk; });
  let ready!: (offset: number) => void;
  let done!: (totals: Totals) => void;
  let fail!: (error: Error) => void;
  const readyP = new Promise<number>((resolve, reject) => { ready = resolve; fail = reject; });
  const doneP = new Promise<Totals>((resolve, reject) => { done = resolve; readyP.catch(reject); child.on("exit", () => reject(new Error(`loop ${env.SKEW_RUNNER} exited without its totals: ${stderr}`))); });
  child.on("message", (message: { ready?: boolean; offsetMs?: number; done?: boolean; totals?: Totals }) => {
    if (message.ready) ready(message.offsetMs!);
    if (message.done) done(message.totals!);
  });
  const exited = new Promise<void>((resolve) => child.on("exit", (code, signal) => {
    fail(new Error(`loop ${env.SKEW_RUNNER} exited before it was ready (code ${code}, signal ${signal}): ${stderr}`));
    resolve();
  }));
  child.on("error", (error) => fail(error));
  doneP.catch(() => {}); // awaited by the test; a loop that never got ready fails through `ready`
  return { child, ready: readyP, done: doneP, exited };
}

/** The most intervals open at one instant; an interval ending where another begins does not overlap it. */
function deepestOverlap(intervals: { began: number; ended: number }[]): number {
  const events = intervals.flatMap((i) => [[i.began, 1], [i.ended, -1]] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let most = 0;
  for (const [, step] of events) most = Math.max(most, (open += step));
  return most;
}

const SIZES = {
  "node-postgres": { plain: 240, exports: 24, calls: 25 },
  // 25 calls, as over node-postgres: with 15, two suites at once on 2 cores once started no more than 4 in any
  // window, so the maxStarts limit was never reached (and the check that it was, below, failed).
  "neon-http": { plain: 80, exports: 12, calls: 25 },
} as const;

function skewSuite(driver: keyof typeof SIZES): void {
  describe(`eight loops on clocks up to ±3 s off, with a 4 s lease, over ${driver}`, () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let pool: pg.Pool;
    let db: Db;
    let endpoint: NeonEndpoint | undefined;
    const loops: Loop[] = [];
    beforeAll(async () => {
      database = await createTestDatabase("skew");
      pool = new pg.Pool({ connectionString: database.url, max: 4 });
      db = drizzle(pool) as unknown as Db;
      await pool.query(CREATE_SKEW_RUNS);
      await setLimit(db, RUNNING_KEY, { maxRunning: MAX_RUNNING });
      await setLimit(db, STARTS_KEY, { maxStarts: MAX_STARTS, window: WINDOW_MS });
      if (driver === "neon-http") endpoint = await startNeonEndpoint({ connectionString: database.url });
    });
    afterAll(async () => {
      for (const { child } of loops) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await Promise.all(loops.map((l) => l.exited));
      await endpoint?.close();
      await pool?.end();
      await database?.drop();
    });

    const rows = async <T>(query: string): Promise<T[]> => (await pool.query(query)).rows as T[];

    it("run every job exactly once, never breach maxRunning or maxStarts, and enqueue every schedule slot once", async () => {
      const size = SIZES[driver];
      const started = performance.now();
      const phases: string[] = [];
      const phase = (name: string) => phases.push(`${name} ${((performance.now() - started) / 1000).toFixed(1)} s`);
      const neon: Record<string, string> = endpoint ? { SKEW_NEON_URL: `postgres://postgres@127.0.0.1:${endpoint.port}/${database.name}`, SKEW_NEON_ENDPOINT: endpoint.fetchEndpoint } : {};
      LOOPS.forEach(({ skewMs, loop }, i) => loops.push(startLoop({
        AKADZE_CLOCK_SKEW_MS: String(skewMs), SKEW_LOOP: loop, SKEW_RUNNER: `${loop}${skewMs >= 0 ? "+" : ""}${skewMs}`, SKEW_DATABASE_URL: database.url, ...neon,
      })));
      // Deadlines, not timing claims (start-up 30 s, the work 120 s, the stop 20 s: below the test's 180 s).
      const offsets = await within(Promise.all(loops.map((l) => l.ready)), 30_000, "the eight loops' ready messages");
      phase("ready");
      // The skew is real in each process: its clock reads that far off the database's (give or take a round trip).
      offsets.forEach((offset, i) => expect(Math.abs(offset - LOOPS[i].skewMs), `loop ${i} measured ${offset} ms`).toBeLessThan(250));

      const { plain, exports, calls } = skewApp(pool, "test");
      await plain.using(db).enqueueMany(Array.from({ length: size.plain }, () => ({})));
      await exports.using(db, { limitKey: RUNNING_KEY }).enqueueMany(Array.from({ length: size.exports }, (_, i) => ({ ms: 150 + (i * 37) % 150 })));
      await calls.using(db, { limitKey: STARTS_KEY }).enqueueMany(Array.from({ length: size.calls }, () => ({})));
      await waitFor(async () => {
        const [{ open, ticks }] = await rows<{ open: number; ticks: number }>(`select
          count(*) filter (where task <> 'skew.tick' and state <> 'succeeded')::int as open,
          count(*) filter (where task = 'skew.tick' and state = 'succeeded')::int as ticks from akadze.all_jobs`);
        return open === 0 && ticks >= MIN_SLOTS;
        // A deadline, not a timing claim: alone the neon-http case finishes in ~17 s, but beside the rest of the
        // suite on 2 cores it once needed more than 25 s, and 46 s with 14 CPU burners beside it (every loop's
        // statements go through the one endpoint in this process). The assertions below are what the test promises.
      }, "every job to finish and the schedule to run its slots", { timeoutMs: 120_000 }).catch(async (error: unknown) => {
        // What was left, for whoever reads a failed run: the jobs not done, the engines' leases, the tasks' states.
        console.log("clock skew: left", JSON.stringify({
          jobs: await rows("select id, task, state, attempt, lease_owner, lease_expires_at, started_at, run_at from akadze.jobs order by id limit 40"),
          owners: await rows("select owner, expires_at from akadze.owners"),
          states: await rows("select task, state, count(*)::int as n from akadze.all_jobs group by 1, 2"),
          databaseNow: (await rows<{ now: string }>("select now()"))[0].now,
        }));
        throw error;
      });
      phase("work done");
      for (const { child } of loops) child.send("stop");
      const totals = await within(Promise.all(loops.map((l) => l.done)), 20_000, "the eight loops' totals after the stop");
      await within(Promise.all(loops.map((l) => l.exited)), 5_000, "the eight loops' exits");
      phase("stopped");

      // Every run spent an attempt (a release or a recovery of a job that never ran refunds it): a body that ran
      // twice on one attempt is the defect this suite looks for. A succeeded job ran once, plus once more for each
      // attempt its invocation's budget cut short (JobTimeout: on 2 cores beside another suite, a quick body
      // started near the end of a 2 s budget can outlast it), which its errors record. Ticks the stop left queued
      // ran once per attempt too.
      const jobs = await rows<{ id: number; task: string; state: string; runs: number; attempt: number; kinds: string[]; expired: boolean }>(`
        select j.id::int, j.task, j.state, count(r.seq)::int as runs, j.attempt,
          array(select e->>'kind' from jsonb_array_elements(j.errors) e) as kinds, j.errors @> '[{"kind": "LeaseExpired"}]' as expired
        from akadze.all_jobs j left join skew_runs r on r.job_id = j.id group by j.id, j.task, j.state, j.attempt, j.errors order by j.id`);
      const timeouts = (j: { kinds: string[] }) => j.kinds.filter((k) => k === "JobTimeout").length;
      const extraRuns = jobs.reduce((n, j) => n + Math.max(0, j.runs - 1 - timeouts(j)), 0);
      const rerunAfterTimeout = jobs.reduce((n, j) => n + Math.min(Math.max(0, j.runs - 1), timeouts(j)), 0);
      const wrong = jobs.filter((j) => j.runs !== j.attempt
        || (j.state === "succeeded" && j.kinds.length !== j.attempt - 1)
        || (j.task !== "skew.tick" && j.state !== "succeeded"));
      const expired = jobs.filter((j) => j.expired).length;

      const exportRuns = await rows<{ began: number; ended: number }>(`select extract(epoch from began) * 1000 as began,
        extract(epoch from ended) * 1000 as ended from skew_runs where task = 'skew.export'`);
      const deepest = deepestOverlap(exportRuns.map((r) => ({ began: Number(r.began), ended: Number(r.ended) })));
      // Handler start times: when each handler was called, on the database's clock (see skew-app.ts).
      const callRows = await rows<{ called: number; lag: number }>(`select extract(epoch from called) * 1000 as called,
        extract(epoch from began - called) * 1000 as lag from skew_runs where task = 'skew.call'`);
      const callStarts = callRows.map((r) => Number(r.called));
      const busiest = busiestWindow(callStarts, WINDOW_MS);
      const lag = Math.round(Math.max(0, ...callRows.map((r) => Number(r.lag))));

      const slots = (await rows<{ slot: number; n: number; early: number }>(`select extract(epoch from run_at) * 1000 as slot, count(*)::int as n,
          max(extract(epoch from run_at - e.at) * 1000) as early
        from akadze.all_jobs j join skew_enqueued e on e.job_id = j.id where task = 'skew.tick' group by run_at order by run_at`))
        .map((s) => ({ slot: Number(s.slot), n: s.n, early: Number(s.early) }));
      const gaps = slots.slice(1).map((s, i) => s.slot - slots[i].slot);
      const byRunner = await rows<{ runner: string; n: number }>("select runner, count(*)::int as n from skew_runs group by runner order by runner");

      const sum = (k: keyof Omit<Totals, "errors">) => totals.reduce((n, t) => n + t[k], 0);
      console.log(`clock skew (${driver}): ${phases.join(", ")}; loops ${LOOPS.map((l, i) => `${l.loop} ${l.skewMs} ms (measured ${Math.round(offsets[i])})`).join(", ")}; ` +
        `${jobs.length} jobs, ${jobs.reduce((n, j) => n + j.runs, 0)} runs, ${extraRuns} extra runs, ${rerunAfterTimeout} runs again after a budget timeout, ${expired} leases expired, ` +
        `recovered ${sum("recovered")}, lost ${sum("lost")}, released ${sum("released")}, ${sum("invocations")} invocations; ` +
        `maxRunning ${MAX_RUNNING}: at most ${deepest} at once over ${exportRuns.length} runs; maxStarts ${MAX_STARTS} per ${WINDOW_MS} ms: ` +
        `at most ${busiest} in a window over ${callStarts.length} starts (a row came up to ${lag} ms after its handler was called); ${slots.length} schedule slots, most jobs per slot ${Math.max(...slots.map((s) => s.n))}, ` +
        `gaps ${JSON.stringify([...new Set(gaps)])}, enqueued before due (ms, on the database's clock) ${JSON.stringify(slots.filter((s) => s.early > 0).map((s) => Math.round(s.early)))}; runs by loop ${byRunner.map((r) => `${r.runner}: ${r.n}`).join(", ")}; ` +
        `errors ${JSON.stringify(totals.flatMap((t) => t.errors).slice(0, 3))}`);

      expect(wrong.slice(0, 10)).toEqual([]);
      expect(extraRuns).toBe(0);
      expect(expired).toBe(0);
      expect(sum("lost")).toBe(0);
      expect(deepest).toBeLessThanOrEqual(MAX_RUNNING);
      expect(busiest).toBeLessThanOrEqual(MAX_STARTS);
      // Each limit was pressed (bodies ran side by side, starts came in bursts), so it was tested. (Reaching it
      // exactly depends on how the loops' claims interleave, which a loaded machine spreads out.)
      expect(deepest).toBeGreaterThan(1);
      expect(busiest).toBeGreaterThan(1);
      // Every slot at most once, on the second. A slot no loop ticked within is skipped (a missed window enqueues
      // only the latest slot, as documented), which a loaded machine makes happen; enough slots ran to check.
      expect(slots.length).toBeGreaterThanOrEqual(MIN_SLOTS);
      expect(slots.filter((s) => s.n !== 1)).toEqual([]);
      expect(gaps.filter((g) => g <= 0 || g % 1000 !== 0)).toEqual([]);
      // A slot is enqueued once it is due on the database's clock, not when a fast host thinks it is.
      expect(slots.filter((s) => s.early > 0)).toEqual([]);
      expect(byRunner.length).toBeGreaterThan(LOOPS.length / 2); // the work was spread over the loops
    }, 180_000);
  });
}

beforeAll(async () => { bundled = await bundleFixtures({ "skew-loop": fixture("skew-loop.ts"), "skewed-clock": fixture("skewed-clock.ts") }); });
afterAll(() => bundled?.remove());

skewSuite("node-postgres");
skewSuite("neon-http");
