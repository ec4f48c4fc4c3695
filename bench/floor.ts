// The raw-SQL floor: no queue library, one client, a table with a state and a payload. Claim a batch with
// `update ... where id in (select ... for update skip locked limit N) returning`, run it, mark it done, repeat.
// What any Postgres queue pays at least for the same work on this machine.
import pg from "pg";
import { transactionsIn, withDatabase } from "./databases.js";
import { DRAINS, drainsOf, ENQUEUE_CHUNK, type Throughput } from "./akadze.js";
import { timed } from "./stats.js";
import { timedWithCpu } from "./pg-cpu.js";

/** Jobs claimed per statement. */
export const FLOOR_BATCH = 500;

export function floorSettings(): string {
  return `one pg client; claim ${FLOOR_BATCH} with update ... where id in (select ... for update skip locked limit ${FLOOR_BATCH}) returning, ` +
    `run each (a no-op), one update marks them done; insert from a JSON array, ${ENQUEUE_CHUNK} per statement`;
}

const SCHEMA = `
  create table floor_jobs (
    id bigserial primary key,
    state text not null default 'queued',
    run_at timestamptz not null default now(),
    payload jsonb not null,
    locked_at timestamptz
  );
  create index floor_jobs_due on floor_jobs (run_at, id) where state = 'queued';`;

const CLAIM = `
  update floor_jobs set state = 'running', locked_at = now()
  where id in (select id from floor_jobs where state = 'queued' and run_at <= now() order by run_at, id
               for update skip locked limit $1)
  returning id, payload`;

export async function floorThroughput(count: number): Promise<Throughput> {
  return withDatabase("tp_floor", async (database) => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    let ended = false;
    try {
      await client.query(SCHEMA);
      const before = await transactionsIn(database.name);
      // Twice on the same database: the first burn-down cold, the second measured (as akadze's).
      const result = await drainsOf(count, async () => {
        const { ms: enqueueMs } = await timed(async () => {
          for (let i = 0; i < count; i += ENQUEUE_CHUNK) {
            const payloads = Array.from({ length: Math.min(ENQUEUE_CHUNK, count - i) }, () => ({}));
            await client.query("insert into floor_jobs (payload) select value from jsonb_array_elements($1::jsonb)", [JSON.stringify(payloads)]);
          }
        });
        let done = 0;
        const runJob = async (_payload: unknown) => {};
        const { ms: processMs, cpu } = await timedWithCpu(database.name, count, async () => {
          for (;;) {
            const { rows } = await client.query<{ id: string; payload: unknown }>(CLAIM, [FLOOR_BATCH]);
            if (rows.length === 0) return;
            await Promise.all(rows.map((r) => runJob(r.payload)));
            await client.query("update floor_jobs set state = 'done' where id = any($1::bigint[])", [rows.map((r) => r.id)]);
            done += rows.length;
          }
        });
        if (done !== count) throw new Error(`the raw-SQL floor ran ${done} of ${count} jobs`);
        return { enqueueMs, processMs, cpu };
      });
      await client.end();
      ended = true;
      const transactions = (await transactionsIn(database.name)) - before;
      return { ...result, transactionsPerJob: transactions / (DRAINS * count) };
    } finally {
      if (!ended) await client.end();
    }
  });
}
