// A prefetching worker killed with SIGKILL ten times over 2,400 jobs on their only attempt (issue 36, item 3): no job
// runs twice, none is left running, and each kill charges at most the documented bound of jobs that never ran (README,
// "Nothing charged that never ran").
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runOnce } from "../../../src/index.js";
import { bundleFixtures, type BundledFixtures } from "../../support/bundle.js";
import { openTestDatabase, type TestDatabase } from "../../support/database.js";
import { KILL_TABLE, killApp } from "../../fixtures/kill-app.js";
import { waitFor } from "../../support/wait-for.js";

// The bound: the jobs marked started (its free slots, plus the lookahead that would start within one round trip) whose
// bodies had not begun.

const WORKER = fileURLToPath(new URL("../../fixtures/kill-worker.ts", import.meta.url));
const JOBS = 2400;
const KILLS = 10;
const SLOTS = 4;
/** The documented bound per kill: the free slots plus the lookahead's cap (pace.ts) at the worker's default prefetch. */
const BOUND = SLOTS + Math.min(4 * SLOTS * 200, 256 * SLOTS);

let t: TestDatabase;
// The worker, bundled once (test/support/bundle.ts): ten tsx start-ups cost tens of seconds on a loaded machine.
let worker: BundledFixtures;
beforeAll(async () => { t = await openTestDatabase("kill_soak"); await t.pool.query(KILL_TABLE); worker = await bundleFixtures({ "kill-worker": WORKER }); });
afterAll(async () => { worker?.remove(); await t?.close(); });

/** A worker that starts no body for this long has nothing left it can claim: the test fails rather than waiting forever. */
const SILENT_MS = 60_000;

/** Starts the worker and kills it once `after` more bodies have started; answers how many did. */
function runAndKill(after: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [worker.path("kill-worker")], { env: { ...process.env, KILL_DATABASE_URL: t.url }, stdio: ["ignore", "pipe", "pipe"] });
    let started = 0;
    let stderr = "";
    let silent = false;
    // Rearmed by every body that starts.
    const quiet = setTimeout(() => { silent = true; child.kill("SIGKILL"); }, SILENT_MS);
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      started += chunk.split(".").length - 1;
      quiet.refresh();
      if (started >= after) child.kill("SIGKILL");
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => { stderr += chunk; });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(quiet);
      if (silent) reject(new Error(`the worker started ${started} of ${after} bodies, then none for ${SILENT_MS} ms: ${stderr}`));
      else if (signal === "SIGKILL") resolve(started);
      else reject(new Error(`the worker exited on its own (code ${code}): ${stderr}`));
    });
  });
}

/** Jobs a killed worker marked started whose bodies never began: what its kill charges once their leases expire. */
async function chargedUnrun(): Promise<number> {
  const counted = await t.rows(`insert into kill_counted select j.id from akadze.jobs j where j.state = 'running' and j.started_at is not null
    and not exists (select 1 from kill_runs r where r.job_id = j.id) on conflict do nothing returning id`);
  return counted.length;
}

describe("a prefetching worker killed with SIGKILL ten times", () => {
  it("runs no job twice, leaves none running, and charges each kill at most the bound of jobs that never ran", async () => {
    await t.pool.query("create table kill_counted (id bigint primary key)");
    const { once } = killApp(t.pool);
    await once.using(t.db).enqueueMany(Array.from({ length: JOBS }, () => ({})));
    const perKill: number[] = [];
    for (let kill = 0; kill < KILLS; kill++) {
      // A killed worker leaves the jobs it held but never started out of reach until their leases lapse, and on a
      // loaded machine it holds more of them: the threshold never asks for more than half of what is still queued.
      const [{ queued }] = await t.rows<{ queued: number }>("select count(*)::int as queued from akadze.jobs where state = 'queued'");
      await runAndKill(Math.max(1, Math.min(40 + kill * 25, Math.floor(queued / 2))));
      // A statement the worker sent before its death still runs to its end in its backend (a body's insert into
      // kill_runs): count only once those backends are gone.
      await waitFor(async () => (await t.rows("select 1 from pg_stat_activity where application_name = 'kill-worker' and datname = current_database()")).length === 0,
        "the killed worker's backends to end", { timeoutMs: 30_000 });
      perKill.push(await chargedUnrun());
    }
    // Past every lease, another engine recovers what the killed workers held and runs the rest.
    const later = new Date(Date.now() + 3600_000);
    const { app } = killApp(t.pool);
    for (let i = 0; i < 200; i++) {
      const summary = await runOnce(app, { db: t.db, now: () => later, batchSize: 200, slots: 8 });
      if (summary.claimed === 0 && summary.recovered === 0) break;
    }
    const runs = await t.rows<{ job_id: string; n: number }>("select job_id, count(*)::int as n from kill_runs group by job_id having count(*) > 1");
    const states = await t.rows<{ state: string; kind: string | null; ran: boolean; n: number }>(`select j.state, j.errors->0->>'kind' as kind,
      exists (select 1 from kill_runs r where r.job_id = j.id) as ran, count(*)::int as n from akadze.all_jobs j group by 1, 2, 3 order by 1, 2, 3`);
    const charged = states.filter((s) => s.state === "failed" && !s.ran).reduce((n, s) => n + s.n, 0);
    console.log(`kill soak: ${JOBS} jobs, ${KILLS} kills, charged-unrun per kill ${JSON.stringify(perKill)} (bound ${BOUND}), states ${JSON.stringify(states)}`);
    expect(runs).toEqual([]); // no job ran twice
    expect(states.filter((s) => s.state === "running" || s.state === "queued")).toEqual([]); // none left running or waiting
    expect(states.reduce((n, s) => n + s.n, 0)).toBe(JOBS);
    for (const n of perKill) expect(n).toBeLessThanOrEqual(BOUND);
    expect(charged).toBe(perKill.reduce((a, b) => a + b, 0)); // exactly those were charged, and nothing else that never ran
    // Every job that never ran a body and was not charged succeeded on a later run.
    expect(states.filter((s) => s.state === "failed" && s.ran).every((s) => s.kind === "LeaseExpired")).toBe(true);
  }, 300_000);
});
