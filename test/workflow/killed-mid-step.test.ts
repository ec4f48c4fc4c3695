// A process killed with SIGKILL in the middle of a workflow step: the next run replays the stored steps and
// re-runs only the one that was cut off. Over node-postgres and both Neon drivers, each killed with its
// connection (PGlite lives inside one process, so there is no other process to carry on).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { getJob, runOnce, type Db } from "../../src/index.js";
import { createTestDatabase } from "../support/postgres.js";
import { CREATE_STEP_RUNS, killApp } from "../fixtures/workflow-steps.js";
import { bundleFixtures, type BundledFixtures } from "../support/bundle.js";

const WORKER = fileURLToPath(new URL("../fixtures/workflow-kill-worker.ts", import.meta.url));
// The child, bundled once for the file (test/support/bundle.ts) instead of a tsx start-up per driver.
let worker: BundledFixtures;
beforeAll(async () => { worker = await bundleFixtures({ "workflow-kill-worker": WORKER }); });
afterAll(() => worker?.remove());

for (const driver of ["node-postgres", "neon-http", "neon-serverless"] as const) {
  describe(`${driver}: SIGKILL during a step`, () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let pool: pg.Pool;
    let db: Db;
    beforeAll(async () => {
      database = await createTestDatabase("wf_kill");
      pool = new pg.Pool({ connectionString: database.url, max: 4 });
      await pool.query(CREATE_STEP_RUNS);
      db = drizzle(pool) as unknown as Db;
    });
    afterAll(async () => { await pool?.end(); await database?.drop(); });

    /** Runs the child until it is inside `step`, then kills it. */
    function killInside(step: string): Promise<void> {
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [worker.path("workflow-kill-worker")], {
          env: { ...process.env, WF_DATABASE_URL: database.url, WF_DRIVER: driver }, stdio: ["ignore", "pipe", "pipe"],
        });
        let stderr = "";
        child.stdout.setEncoding("utf8").on("data", (chunk: string) => { if (chunk.includes(`in:${step}`)) child.kill("SIGKILL"); });
        child.stderr.setEncoding("utf8").on("data", (chunk: string) => { stderr += chunk; });
        child.on("error", reject);
        child.on("exit", (code, signal) => signal === "SIGKILL" ? resolve() : reject(new Error(`the child exited on its own (code ${code}): ${stderr}`)));
      });
    }

    it("re-runs only the step that was cut off", async () => {
      const app = killApp(pool, "parent");
      const id = await app.taskByName("kill.me").using(db).enqueue({});
      await killInside("two");
      expect((await pool.query("select state from akadze.all_jobs where id = $1", [id])).rows[0].state).toBe("running"); // the kill held its lease
      // Later invocations, once the lease has expired (their clocks hours on, past the recovery's backoff), finish it.
      for (let i = 1; i <= 3; i++) {
        const at = new Date(Date.now() + i * 3600_000);
        await runOnce(app, { db, now: () => at });
      }
      const job = await getJob(db, id);
      expect(job).toMatchObject({ state: "succeeded", result: [expect.stringMatching(/^one by pid-/), "two by parent", "three by parent"] });
      const runs = (await pool.query("select step, runner from wf_step_runs order by seq")).rows;
      expect(runs.map((r) => r.step)).toEqual(["one", "two", "two", "three"]);
      expect(runs[0].runner).toBe(runs[1].runner); // the killed child ran one and started two
      expect(runs.slice(2).map((r) => r.runner)).toEqual(["parent", "parent"]);
      expect(job?.errors.map((e) => e.kind)).toEqual(["LeaseExpired"]);
    }, 120_000);
  });
}
