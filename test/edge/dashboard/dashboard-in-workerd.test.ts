// The dashboard inside real workerd: the example Worker with `akadzeDashboard()` (examples/worker-with-dashboard.ts),
// bundled by wrangler, signing a browser in with Web Crypto and acting over neon-http on a real Postgres.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import pg from "pg";
import { Miniflare } from "miniflare";
import { runOnce, type Db } from "../../../src/index.js";
import { app, charge, setup } from "../../../functions/app.js";
import { createTestDatabase } from "../../support/postgres.js";
import { bundleWithWrangler, startWorkerd, type WorkerdHarness } from "../../support/workerd.js";

const SECRET = "workerd-dashboard-secret";

let outdir: string;
let harness: WorkerdHarness | undefined;
let pool: pg.Pool;
let db: Db;
let mf: Miniflare;

/** Bundles the entry as `wrangler deploy` would (its own config: wrangler.toml names functions/cloudflare.ts). */
async function bundle(dir: string, entry: string): Promise<string> {
  const config = join(dir, "wrangler.toml");
  await writeFile(config, `name = "dashboard"\nmain = ${JSON.stringify(resolve(entry))}\ncompatibility_date = "2026-04-01"\ncompatibility_flags = ["nodejs_compat"]\n`);
  await bundleWithWrangler(join(dir, "out"), config);
  return join(dir, "out", "worker-with-dashboard.js");
}

beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), "akadze-dashboard-worker-"));
  const [scriptPath, database] = await Promise.all([bundle(outdir, "examples/worker-with-dashboard.ts"), createTestDatabase("dashboard_workerd")]);
  harness = await startWorkerd({ scriptPath, modulesRoot: join(outdir, "out"), database, secret: SECRET, setup });
  ({ mf, db, pool } = harness);
}, 120_000);

afterAll(async () => {
  // Each step runs even if an earlier one (or beforeAll) failed, so no database or directory is left behind.
  await harness?.close();
  if (outdir) await rm(outdir, { recursive: true, force: true });
});

describe("the dashboard in workerd", () => {
  it("signs in with the Worker's secret, shows a failed job and requeues it with the CSRF token", async () => {
    const id = await charge.using(db).enqueue({ orderId: "00000000-0000-4000-8000-000000000001", payment: "declined" });
    await runOnce(app, { db, queues: ["orders"] });
    const form = (fields: Record<string, string>, cookie = "") => ({
      method: "POST", body: new URLSearchParams(fields).toString(), redirect: "manual" as const,
      headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie ? { cookie } : {}) },
    });
    const origin = "https://shop.example.com/akadze/ui";

    expect((await mf.dispatchFetch(`${origin}/login`, form({ secret: "wrong" }))).status).toBe(401);
    const signIn = await mf.dispatchFetch(`${origin}/login`, form({ secret: SECRET }));
    expect(signIn.status).toBe(303);
    const setCookie = signIn.headers.get("set-cookie")!;
    expect(setCookie).toMatch(/; HttpOnly/);
    expect(setCookie).toMatch(/; Secure/); // not localhost
    const cookie = setCookie.split(";")[0];

    const page = await (await mf.dispatchFetch(`${origin}/jobs/${id}`, { headers: { cookie } })).text();
    expect(page).toContain("card declined");
    const token = /name="_csrf" value="([^"]+)"/.exec(page)![1];
    expect((await mf.dispatchFetch(`${origin}/jobs/${id}/requeue`, form({}, cookie))).status).toBe(403);
    expect((await pool.query("select state from akadze.all_jobs where id = $1", [id])).rows[0].state).toBe("failed");
    const requeued = await mf.dispatchFetch(`${origin}/jobs/${id}/requeue`, form({ _csrf: token }, cookie));
    expect(requeued.status).toBe(303);
    expect((await pool.query("select state from akadze.all_jobs where id = $1", [id])).rows[0].state).toBe("queued");
  });
});
