// enqueueQuery's sqlArgs (args the database computes as the statement runs, e.g. an id an earlier statement of
// the same batch created) on every driver, and withPool: a session for interactive transactions that ends
// with its callback.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as v from "valibot";
import { sql } from "drizzle-orm";
import { createApp, InvalidInput, jobIdsOf, runAtomically, runOnce, withPool } from "../../src/index.js";
import { startNeonEndpoint, type NeonEndpoint } from "../../src/dev/neon-endpoint.js";
import { forEachDriver } from "../support/drivers.js";
import { createTestDatabase } from "../support/postgres.js";

const app = createApp();
const charge = app.task("shop.charge", { args: v.object({ orderId: v.number(), customer: v.string() }) }, async ({ orderId }) => ({ charged: orderId }));

forEachDriver((h) => {
  beforeAll(async () => {
    await h().db.execute(sql`create table if not exists sql_args_orders (id bigserial primary key, customer text not null)`);
  });

  it("an enqueue in the same batch carries the id the order's insert took from its sequence, and the job runs with it", async () => {
    const { db } = h();
    await db.execute(sql`insert into sql_args_orders (customer) values ('zed')`);
    const [[order], enqueued] = await runAtomically(db, (tx) => [
      tx.execute(sql`insert into sql_args_orders (customer) values ('ada') returning id::int`),
      charge.using(tx).enqueueQuery({ customer: "ada" }, { orderId: sql`currval(pg_get_serial_sequence('sql_args_orders', 'id'))` }),
    ]) as [[{ id: number }], unknown];
    const [jobId] = jobIdsOf(enqueued);
    expect(await h().rows(`select args from akadze.all_jobs where id = ${jobId}`)).toEqual([{ args: { customer: "ada", orderId: order.id } }]);
    await runOnce(app, { db, budget: "5s" });
    expect(await h().rows(`select state, result from akadze.all_jobs where id = ${jobId}`)).toEqual([{ state: "succeeded", result: { charged: order.id } }]);
  });

  it("a computed arg the schema refuses fails the job when it runs; the args given are checked at once", async () => {
    const { db } = h();
    const [enqueued] = await runAtomically(db, (tx) => [charge.using(tx).enqueueQuery({ customer: "bob" }, { orderId: sql`'not a number'::text` })]);
    const [jobId] = jobIdsOf(enqueued);
    await runOnce(app, { db, budget: "5s" });
    expect(await h().rows(`select state from akadze.all_jobs where id = ${jobId}`)).toEqual([{ state: "failed" }]);

    const before = await h().rows("select count(*)::int as n from akadze.all_jobs");
    const bad: [string, () => unknown][] = [
      ["customer", () => charge.using(db).enqueueQuery({ customer: 7 } as any, { orderId: sql`1` })],
      ["given both in args and in sqlArgs", () => charge.using(db).enqueueQuery({ customer: "c", orderId: 1 } as any, { orderId: sql`1` })],
      ["must be an sql`...` expression", () => charge.using(db).enqueueQuery({ customer: "c" }, { orderId: 1 as any })],
      ["names no key", () => charge.using(db).enqueueQuery({ customer: "c" } as any, {} as any)],
    ];
    for (const [message, call] of bad) {
      expect(call).toThrow(InvalidInput);
      expect(call).toThrow(message);
    }
    expect(await h().rows("select count(*)::int as n from akadze.all_jobs")).toEqual(before);
  });
});

describe("withPool", () => {
  let endpoint: NeonEndpoint;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let env: { DATABASE_URL: string; NEON_FETCH_ENDPOINT: string };
  beforeAll(async () => {
    database = await createTestDatabase("with_pool");
    endpoint = await startNeonEndpoint({ connectionString: database.url });
    env = { DATABASE_URL: `postgres://postgres@127.0.0.1:${endpoint.port}/${database.name}`, NEON_FETCH_ENDPOINT: endpoint.fetchEndpoint };
  });
  afterAll(async () => {
    await endpoint?.close();
    await database?.drop();
  });

  it("gives Neon's WebSocket pool under a local endpoint: a transaction commits, or rolls back on a throw", async () => {
    await withPool(env, async (db) => { await db.execute(sql`create table pooled (n int)`); });
    await withPool(env, (db) => db.transaction(async (tx) => { await tx.execute(sql`insert into pooled values (1)`); }));
    await expect(withPool(env, (db) => db.transaction(async (tx) => {
      await tx.execute(sql`insert into pooled values (2)`);
      throw new Error("changed my mind");
    }))).rejects.toThrow("changed my mind");
    const rows = await withPool(env, async (db) => (await db.execute(sql`select n from pooled`)).rows);
    expect(rows).toEqual([{ n: 1 }]);
  });

  it("ends its pool when the callback settles: the database cannot be kept past it", async () => {
    let kept: any;
    await withPool(env, async (db) => { kept = db; await db.execute(sql`select 1`); });
    expect(kept.$client.ended).toBe(true);
    await expect(kept.execute(sql`select 1`)).rejects.toThrow();
  });

  it("refuses bad input before it opens anything", async () => {
    await expect(withPool({ DATABASE_URL: "mysql://x" }, async () => 1)).rejects.toThrow(InvalidInput);
    await expect(withPool(env, async () => 1, { driver: "neon-http" as any })).rejects.toThrow('driver must be "auto", "neon-serverless" or "node-postgres"');
    await expect(withPool(env, async () => 1, { max: 0 })).rejects.toThrow("max must be a whole number");
    await expect(withPool(env, "nope" as any)).rejects.toThrow("must be a function");
  });
});
