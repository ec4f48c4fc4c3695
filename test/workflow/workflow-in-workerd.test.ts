// A workflow in real workerd over neon-http: an edge route starts it, cron ticks run it through an event
// and a day's sleep (the Worker's clock is moved by a route), each step once.
import { afterAll, beforeAll, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { Miniflare } from "miniflare";
import { createTestDatabase } from "../support/postgres.js";
import { bundleWithWrangler, startWorkerd, type WorkerdHarness } from "../support/workerd.js";

const CONFIG = fileURLToPath(new URL("../fixtures/workflow-wrangler.toml", import.meta.url));
let outdir: string;
let harness: WorkerdHarness | undefined;
let mf: Miniflare;

beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), "akadze-workflow-worker-"));
  const [, database] = await Promise.all([bundleWithWrangler(outdir, CONFIG), createTestDatabase("wf_workerd")]);
  harness = await startWorkerd({
    scriptPath: join(outdir, "workflow-worker.js"), modulesRoot: outdir, database, secret: "s",
    setup: async (db) => {
      await db.execute(sql.raw("create table wf_orders (ref text primary key)"));
      await db.execute(sql.raw("create table wf_log (seq serial primary key, ref text not null, what text not null)"));
    },
  });
  mf = harness.mf;
}, 120_000);
afterAll(async () => {
  await harness?.close();
  if (outdir) await rm(outdir, { recursive: true, force: true });
});

const rows = async (text: string) => (await harness!.pool.query(text)).rows;
const post = async (path: string, body: unknown) => {
  const res = await mf.dispatchFetch(`http://worker${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() as any };
};
async function tick(): Promise<void> {
  const worker = await mf.getWorker() as unknown as { scheduled(options: { cron: string }): Promise<{ outcome: string }> };
  expect((await worker.scheduled({ cron: "* * * * *" })).outcome).toBe("ok");
}
const state = async (id: number) => (await rows(`select state, attempt, result from akadze.all_jobs where id = ${id}`))[0];

it("a workflow started by an edge route completes through cron ticks over neon-http", async () => {
  const { status, body } = await post("/orders", { ref: "A-1" });
  expect(status).toBe(201);
  const id = body.jobId;
  await tick(); // charge, then park on the event
  expect(await state(id)).toMatchObject({ state: "queued", attempt: 0 });
  expect(await rows("select what from wf_log order by seq")).toEqual([{ what: "charged" }]);

  // A shipment whose own write fails: the event rolls back with it and wakes nothing.
  expect((await post("/shipments", { ref: "A-1", carrier: "ups", fail: true })).status).toBe(500);
  expect((await rows(`select state from akadze.steps where job_id = ${id} and name = 'shipped'`))[0].state).toBe("waiting");
  expect((await post("/shipments", { ref: "A-1", carrier: "dhl" })).status).toBe(200);
  await tick(); // takes the event, parks for a day
  expect(await state(id)).toMatchObject({ state: "queued", attempt: 0 });

  await tick(); // nothing due yet
  expect(await rows("select what from wf_log order by seq")).toEqual([{ what: "charged" }, { what: "shipped" }]);
  await post("/clock", { advanceMs: 86_400_000 + 1000 });
  await tick();
  expect(await state(id)).toMatchObject({ state: "succeeded", attempt: 1, result: { ref: "A-1", carrier: "dhl" } });
  expect(await rows("select what from wf_log order by seq")).toEqual([{ what: "charged" }, { what: "shipped" }, { what: "followed up" }]);
  expect(await rows(`select name, state from akadze.steps where job_id = ${id} order by seq`)).toEqual([
    { name: "charge", state: "done" }, { name: "shipped", state: "done" }, { name: "cool-off", state: "done" }, { name: "follow-up", state: "done" },
  ]);
}, 60_000);
