// An order and the job that carries its new id, written by one Worker request in one transaction, in real
// workerd (miniflare) through the local Neon endpoint: over Neon's WebSocket Pool (`withPool`, an interactive
// transaction) and over neon-http (one `db.batch`, the id read by `sqlArgs`). Both commit, or neither does.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setup } from "../fixtures/transactions-worker.js";
import { createTestDatabase } from "../support/postgres.js";
import { bundleWithWrangler, startWorkerd, type WorkerdHarness } from "../support/workerd.js";

let outdir: string;
let harness: WorkerdHarness | undefined;

beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), "akadze-transactions-worker-"));
  const config = join(outdir, "wrangler.toml");
  await writeFile(config, [
    `name = "transactions"`, `main = ${JSON.stringify(resolve("test/fixtures/transactions-worker.ts"))}`,
    `compatibility_date = "2026-04-01"`, `compatibility_flags = ["nodejs_compat"]`, "",
  ].join("\n"));
  const [, database] = await Promise.all([bundleWithWrangler(join(outdir, "out"), config), createTestDatabase("transactions_workerd")]);
  harness = await startWorkerd({
    scriptPath: join(outdir, "out", "transactions-worker.js"), modulesRoot: join(outdir, "out"), database, secret: "transactions", setup,
  });
}, 120_000);

afterAll(async () => {
  await harness?.close();
  if (outdir) await rm(outdir, { recursive: true, force: true });
});

beforeEach(async () => {
  await harness!.pool.query("truncate shop_orders, akadze.jobs, akadze.job_history, akadze.failed_jobs restart identity");
});

const rows = async (text: string) => (await harness!.pool.query(text)).rows;
const post = (path: string, body: unknown) => harness!.mf.dispatchFetch(`http://worker${path}`, {
  method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
});

describe.each([
  { driver: "the WebSocket Pool", path: "/orders/ws", refused: 409 },
  { driver: "neon-http", path: "/orders/http", refused: 500 },
])("an order and its charge in one request, over $driver", ({ path, refused }) => {
  it("commit together: the job carries the order's id from the sequence, and runs with it", async () => {
    // An earlier order advances the sequence, so an id that ignored it would not match.
    await harness!.pool.query("insert into shop_orders (customer, item) values ('zed', 'spoon')");
    const res = await post(path, { customer: "ada", item: "teapot" });
    expect(res.status).toBe(201);
    const { id } = await res.json() as { id: number };
    expect(id).toBe(2);
    expect(await rows("select id::int, customer, item from shop_orders where customer = 'ada'")).toEqual([{ id: 2, customer: "ada", item: "teapot" }]);
    expect(await rows("select task, args from akadze.all_jobs")).toEqual([{ task: "shop.charge", args: { orderId: 2, customer: "ada" } }]);

    // The job's args pass the schema when it runs (orderId is a number), and its result names the order.
    const worker = await harness!.mf.getWorker() as unknown as { scheduled(options: { cron: string }): Promise<{ outcome: string }> };
    expect((await worker.scheduled({ cron: "* * * * *" })).outcome).toBe("ok");
    expect(await rows("select state, result from akadze.all_jobs")).toEqual([{ state: "succeeded", result: { charged: 2 } }]);
  });

  it("roll back together: an enqueue that fails after the order's insert leaves neither", async () => {
    expect((await post(path, { customer: "bob", item: "kettle" })).status).toBe(201);
    // Bob's first charge is still queued: the second enqueue clashes with its uniqueKey, after the insert ran.
    const res = await post(path, { customer: "bob", item: "mug" });
    expect(res.status).toBe(refused);
    expect(await rows("select id::int, item from shop_orders")).toEqual([{ id: 1, item: "kettle" }]);
    expect(await rows("select args from akadze.all_jobs")).toEqual([{ args: { orderId: 1, customer: "bob" } }]);
  });
});
