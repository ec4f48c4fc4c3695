// The heartbeat and the settle lock an invocation's rows in one order (issue 21, item 8), so the two on two connections
// at once over the same jobs never deadlock: Postgres aborting one would lose a heartbeat (healthy jobs charged at lease
// expiry) or a settle (outcomes lost).
import { afterAll, beforeAll, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { queryJson } from "../../src/db/query.js";
import { heartbeatStatement } from "../../src/sql/claim/heartbeat.js";
import { settleStatement, type Outcome } from "../../src/sql/settle/settle.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { seededRandom } from "../fixtures/fault-tasks.js";

// A heartbeat covers every job held; a settle records the finished ones and starts prefetched ones.

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("lock_order"); });
afterAll(async () => { await t?.close(); });

const OWNER = "inv-lock-order";
const ROWS = 400;

function shuffled(ids: number[], random: () => number): number[] {
  const a = [...ids];
  for (let i = a.length - 1; i > 0; i--) { const j = Math.floor(random() * (i + 1)); [a[i], a[j]] = [a[j]!, a[i]!]; }
  return a;
}

it("a heartbeat and a settle over the same rows, in any order of ids, never deadlock", async () => {
  const random = seededRandom(21);
  const ids = (await t.rows<{ id: string }>(`insert into akadze.jobs (task, queue, args, state, attempt, lease_owner, lease_expires_at, started_at)
    select 't', 'default', '{}', 'running', 1, '${OWNER}', now() + interval '1 hour', now() from generate_series(1, ${ROWS}) returning id`)).map((r) => Number(r.id));
  let deadlocks = 0;
  const rounds = 40;
  for (let round = 0; round < rounds; round++) {
    await t.pool.query(`update akadze.jobs set state = 'running', lease_owner = '${OWNER}', lease_expires_at = now() + interval '1 hour', attempt = 1, started_at = null, finished_at = null`);
    // Half the rows finish (snoozed: back to queued), the other half are started by the same settle; the
    // heartbeat covers them all. Each gets its ids in its own random order.
    const order = shuffled(ids, random);
    const finished = order.slice(0, ROWS / 2);
    const prefetched = order.slice(ROWS / 2);
    const outcomes: Outcome[] = finished.map((id) => ({ id, kind: "snooze", delayMs: 0, attempt: 1 }));
    const results = await Promise.allSettled([
      queryJson(t.db, heartbeatStatement(OWNER, sql`now()`, 60_000, shuffled(ids, random))),
      queryJson(t.db, settleStatement(OWNER, sql`now()`, outcomes, { ids: prefetched, limited: false })),
    ]);
    for (const r of results) {
      if (r.status === "rejected") {
        if (/deadlock/.test(String((r.reason as Error)?.cause ?? r.reason))) deadlocks++;
        else throw r.reason;
      }
    }
  }
  expect(deadlocks).toBe(0);
}, 120_000);
