// The three raw-SQL floors on akadze's own queue table (its columns and every partial index), the cost a
// completion pays by schema alone: the row kept and updated to `succeeded` (the schema before 0007), the
// row deleted (keepSucceeded: false), the row moved into akadze.job_history (the default). Two clients,
// each claiming FLOOR_BATCH with akadze's shape of claim, then completing them in one statement.
//   npx tsx bench/floors.ts [jobs] [batch]      # one measurement of each, 20,000 jobs and FLOOR_BATCH by default
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate, type Db } from "../src/index.js";
import { runAtomically } from "../src/db/query.js";
import { applyMigrationStatements } from "../src/sql/schema/apply-migration.js";
import { MIGRATIONS } from "../src/sql/schema/migrations.generated.js";
import { FINISHED_COLUMN_NAMES } from "../src/sql/history/archive.js";
import { drainsOf, ENQUEUE_CHUNK, type Throughput } from "./akadze.js";
import { withDatabase } from "./databases.js";
import { timed } from "./stats.js";
import { timedWithCpu } from "./pg-cpu.js";

export const FLOOR_BATCH = 500;
const CLIENTS = 2;

/** How a floor completes what it claimed. */
export type FloorKind = "rows kept" | "history" | "delete";
export const FLOOR_KINDS: FloorKind[] = ["rows kept", "history", "delete"];

export function floorsSettings(): string {
  return `${CLIENTS} pg clients on akadze's jobs table (all its partial indexes); claim ${FLOOR_BATCH} with update ... state = 'running' ` +
    "where id in (select ... for update skip locked limit N) returning; complete them in one statement: update to succeeded " +
    "(rows kept, the schema before 0007), delete (keepSucceeded: false), or delete ... returning into akadze.job_history (the default); " +
    "the rows marked batch N claim N at a time instead (akadze's burn-down batch)";
}

const CLAIM = `
  update akadze.jobs j set state = 'running', attempt = j.attempt + 1, lease_owner = $2, lease_expires_at = now() + interval '30 seconds', started_at = now()
  where j.id in (select id from akadze.jobs where state = 'queued' and run_at <= now() order by priority desc, run_at, id
                 for update skip locked limit $1)
  returning j.id, j.args`;

const COMPLETE: Record<FloorKind, string> = {
  "rows kept": `update akadze.jobs set state = 'succeeded', finished_at = now(), lease_owner = null, lease_expires_at = null
    where id = any($1::bigint[]) and state = 'running'`,
  delete: "delete from akadze.jobs where id = any($1::bigint[]) and state = 'running'",
  history: `with moved as (delete from akadze.jobs where id = any($1::bigint[]) and state = 'running'
      returning id, task, queue, args, 'succeeded'::text as state, priority, attempt, max_attempts, run_at, expires_at, unique_key, limit_key,
        limit_wait_ms, cancel_requested, errors, result, created_at, started_at, now() as finished_at, fair_key, trace_context)
    insert into akadze.job_history (${FINISHED_COLUMN_NAMES}) select ${FINISHED_COLUMN_NAMES} from moved`,
};

/** The name of a floor's row in the results: at FLOOR_BATCH (the issue's shape), or at another claim size. */
export function floorName(kind: FloorKind, batch = FLOOR_BATCH): string {
  return `floor on akadze's table: ${kind}${batch === FLOOR_BATCH ? "" : `, batch ${batch}`}`;
}

/** One floor over `count` jobs in a fresh database, claiming `batch` at a time. */
export async function floorOf(kind: FloorKind, count: number, batch = FLOOR_BATCH): Promise<Throughput> {
  return withDatabase(`floor_${kind}`, async (database) => {
    const pool = new pg.Pool({ connectionString: database.url, max: CLIENTS + 1 });
    // An idle connection the server ends (its database dropped, an admin's terminate) is no measurement: a query
    // in flight still fails the floor, but an idle client's error must not crash the whole run.
    pool.on("error", () => {});
    try {
      const db = drizzle(pool) as unknown as Db;
      if (kind === "rows kept") {
        // The schema before the history: every migration up to 0006.
        for (const m of MIGRATIONS.slice(0, MIGRATIONS.findIndex((x) => x.name === "0007_job_history"))) {
          await runAtomically(db, (d) => applyMigrationStatements(m).map((s) => d.execute(s)));
        }
      } else {
        await migrate(db);
        // The partitions a worker would have made ahead (a day wide, the default retention's).
        await pool.query("select akadze.maintain_history(now(), 7 * 86400000, 86400, 172800, 1000)");
      }
      // Twice on the same database: the first burn-down cold, the second measured (as akadze's).
      const result = await drainsOf(count, async () => {
        const { ms: enqueueMs } = await timed(async () => {
          for (let i = 0; i < count; i += ENQUEUE_CHUNK) {
            await pool.query("insert into akadze.jobs (task, args) select 'bench.noop', value from jsonb_array_elements($1::jsonb)",
              [JSON.stringify(Array.from({ length: Math.min(ENQUEUE_CHUNK, count - i) }, () => ({})))]);
          }
        });
        await pool.query("analyze akadze.jobs");
        let done = 0;
        const { ms: processMs, cpu } = await timedWithCpu(database.name, count, () => Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
          const client = await pool.connect();
          try {
            for (;;) {
              const { rows } = await client.query<{ id: string }>(CLAIM, [batch, `floor-${c}`]);
              if (rows.length === 0) return;
              await client.query(COMPLETE[kind], [rows.map((r) => r.id)]);
              done += rows.length;
            }
          } finally {
            client.release();
          }
        })).then(() => {}));
        if (done !== count) throw new Error(`the ${kind} floor ran ${done} of ${count} jobs`);
        return { enqueueMs, processMs, cpu };
      });
      return { ...result, transactionsPerJob: null };
    } finally {
      await pool.end();
    }
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const jobs = Number(process.argv[2] ?? 20_000);
  const batch = Number(process.argv[3] ?? FLOOR_BATCH);
  for (const kind of FLOOR_KINDS) {
    const t = await floorOf(kind, jobs, batch);
    console.log(`${floorName(kind, batch)}: ${Math.round(t.processPerSec)} jobs/s (${jobs} jobs)`);
  }
}
