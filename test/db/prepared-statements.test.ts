// On a pool of sessions, node-postgres's or neon-serverless's (node-postgres's protocol over a WebSocket, here through
// the local endpoint's relay), the engine's statements are named prepared statements: a connection plans a claim's
// text once, not at every claim. A session whose statements vanish (a transaction-mode pooler) gets the texts whole
// from then on. (test/app/enqueue.test.ts: an enqueue prepared once on node-postgres.)
import { afterAll, beforeAll, expect, it } from "vitest";
import * as v from "valibot";
import { Pool } from "@neondatabase/serverless";
import { drizzle } from "drizzle-orm/neon-serverless";
import { createApp, runOnce, type Db } from "../../src/index.js";
import { startNeonEndpoint, type NeonEndpoint } from "../../src/dev/neon-endpoint.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { neonUrl } from "../support/neon.js";
import { CLAIM_MARK } from "../../src/sql/claim/claim.js";

let t: TestDatabase;
let endpoint: NeonEndpoint;
beforeAll(async () => {
  t = await openTestDatabase("prepared_ws");
  endpoint = await startNeonEndpoint({ connectionString: t.url });
});
afterAll(async () => { await endpoint?.close(); await t?.close(); });

/** The pool's query, as both pools have it. */
type Queryable = { query(text: string): Promise<{ rows: any[] }> };

/** `run` over a neon-serverless pool of one connection (every statement meets the same session). */
async function oneConnection(run: (db: Db, pool: Queryable) => Promise<void>): Promise<void> {
  const pool = new Pool({ connectionString: neonUrl(endpoint, new URL(t.url).pathname.slice(1)), max: 1 });
  pool.on("error", () => {});
  try { await run(drizzle({ client: pool }) as unknown as Db, pool); } finally { await pool.end(); }
}

const pools: [string, (run: (db: Db, pool: Queryable) => Promise<void>) => Promise<void>][] = [
  ["node-postgres", (run) => t.oneConnection(run)],
  ["neon-serverless", oneConnection],
];

it("over neon-serverless a connection prepares each of the engine's texts once: claims, settles and enqueues", async () => {
  await oneConnection(async (db, pool) => {
    const app = createApp();
    const task = app.task("ws.prepared", { args: v.object({ n: v.number() }) }, async () => {});
    for (let round = 0; round < 3; round++) {
      await task.using(db).enqueueMany([{ n: 1 }, { n: 2 }]);
      expect(await runOnce(app, { db })).toMatchObject({ succeeded: 2 });
    }
    const { rows } = await pool.query(`select count(*)::int as n, coalesce(sum(generic_plans + custom_plans), 0)::int as runs
      from pg_prepared_statements where strpos(statement, '${CLAIM_MARK.replaceAll("'", "''")}') > 0`);
    // A few claim shapes (first, later), each prepared once and run many times.
    expect(rows[0].n).toBeGreaterThan(0);
    expect(rows[0].runs).toBeGreaterThan(rows[0].n);
    const enqueues = await pool.query("select count(*)::int as n from pg_prepared_statements where statement like '%insert into akadze.jobs%' and statement not like '%settle_locked%'");
    expect(enqueues.rows[0].n).toBe(1);
  });
});

for (const [driver, withOneConnection] of pools) {
  it(`over ${driver} a session whose prepared statements vanish (a pooler in transaction mode) enqueues once each, its texts sent whole from then on`, async () => {
    await withOneConnection(async (db, pool) => {
      const task = createApp().task(`pooled.${driver}`, { args: v.object({ n: v.number() }) }, async () => {});
      await task.using(db).enqueue({ n: 1 });
      // What a transaction-mode pooler does to a session's statements: the next server connection never saw them.
      await pool.query("deallocate all");
      await task.using(db).enqueue({ n: 2 });
      await task.using(db).enqueue({ n: 3 });
      const { rows } = await pool.query("select count(*)::int as n from pg_prepared_statements");
      expect(rows[0].n).toBe(0);
      expect((await t.rows(`select args->>'n' as n from akadze.all_jobs where task = 'pooled.${driver}' order by id`)).map((r) => Number(r.n))).toEqual([1, 2, 3]);
    });
  });
}
