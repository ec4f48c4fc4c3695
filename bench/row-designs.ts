// Raw-SQL floors of a job's whole row life under several schema designs (bench/row-designs-sql.ts): enqueue
// in chunks, then two clients each claim a batch, renew its leases once, and settle it as succeeded, until the
// queue is empty. Each design in a fresh database migrated by akadze, then changed as the design says. Per job:
// Postgres CPU (backends' /proc), WAL this database wrote (pg_walinspect, by the relations' database oid, plus
// the commit records of the same transactions) and the whole server's WAL position moved (others' work too),
// row versions each design leaves dead, and the share of updates that were HOT.
//   npx tsx bench/row-designs.ts [jobs] [batch[,batch]] [rounds]     # 20,000 jobs, batches 100 and 500, 3 rounds
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate, type Db } from "../src/index.js";
import { ENQUEUE_CHUNK } from "./akadze.js";
import { ADMIN_URL, withDatabase, type BenchDatabase } from "./databases.js";
import { cpuSpentMs, snapshotCpu } from "./pg-cpu.js";
import { median, rate, sleep, timed } from "./stats.js";
import { ROW_DESIGNS, type RowDesign } from "./row-designs-sql.js";

const CLIENTS = 2;

/** Row counters of every table in schema akadze (partitions included), summed. */
interface RowCounts { ins: number; upd: number; hot: number; del: number; dead: number }

/** WAL between two positions: all of the server's, and the part this database wrote (with its commit records). */
interface WalWindow { serverBytes: number; ownBytes: number; ownFpiBytes: number }

/** One measured pass of a design: the second enqueue-and-drain on its database (the first warms it). */
export interface RowLifeRun {
  design: string; batch: number; round: number;
  enqueuePerSec: number; processPerSec: number;
  /** Postgres CPU µs per job: the enqueue, and the claims, heartbeats and settles. */
  enqueueCpuUs: number | null; processCpuUs: number | null;
  /** WAL bytes per job this database wrote (full-page images included, and apart), and the server's. */
  enqueueWal: number; processWal: number; fpiWal: number; serverWal: number;
  /** Row versions updated or deleted per job (each leaves one dead), the share of updates that were HOT, dead rows left per job. */
  deadMade: number; hotShare: number; updatesPerJob: number; deadLeft: number;
}

async function rowCounts(url: string): Promise<RowCounts> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(`select coalesce(sum(n_tup_ins), 0)::float8 as ins, coalesce(sum(n_tup_upd), 0)::float8 as upd,
        coalesce(sum(n_tup_hot_upd), 0)::float8 as hot, coalesce(sum(n_tup_del), 0)::float8 as del, coalesce(sum(n_dead_tup), 0)::float8 as dead
      from pg_stat_user_tables where schemaname = 'akadze'`);
    return rows[0];
  } finally {
    await client.end();
  }
}

/** Waits until no backend is connected to `database`: an exiting backend flushes its table counters. */
async function backendsGone(database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    for (let i = 0; i < 100; i++) {
      const { rows } = await admin.query("select count(*)::int as n from pg_stat_activity where datname = $1", [database]);
      if (rows[0].n === 0) break;
      await sleep(50);
    }
    await sleep(200);
  } finally {
    await admin.end();
  }
}

async function walLsn(client: pg.ClientBase): Promise<string> {
  return (await client.query("select pg_current_wal_flush_lsn()::text as l")).rows[0].l;
}

/** The WAL between `from` and `to`, and the part of it that is this database's (by relation, and its transactions' commits). */
async function walWindow(client: pg.ClientBase, from: string, to: string): Promise<WalWindow> {
  const { rows } = await client.query(`
    with r as (select * from pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)),
    db as (select '%/' || (select oid from pg_database where datname = current_database()) || '/%' as pattern),
    own_xids as (select distinct xid::text::bigint as x from r where xid::text <> '0' and block_ref like (select pattern from db))
    select ($2::pg_lsn - $1::pg_lsn)::float8 as server,
      coalesce(sum(record_length) filter (where block_ref like (select pattern from db) or xid::text::bigint in (select x from own_xids)), 0)::float8 as own,
      coalesce(sum(fpi_length) filter (where block_ref like (select pattern from db) or xid::text::bigint in (select x from own_xids)), 0)::float8 as fpi
    from r`, [from, to]);
  return { serverBytes: rows[0].server, ownBytes: rows[0].own, ownFpiBytes: rows[0].fpi };
}

async function enqueueAll(client: pg.ClientBase, design: RowDesign, count: number): Promise<void> {
  for (let i = 0; i < count; i += ENQUEUE_CHUNK) {
    await client.query(design.enqueue, [JSON.stringify(Array.from({ length: Math.min(ENQUEUE_CHUNK, count - i) }, () => ({})))]);
  }
}

/** Two clients claim, renew and settle until a claim comes back empty; returns the jobs settled. */
async function drainAll(clients: pg.ClientBase[], design: RowDesign, batch: number): Promise<number> {
  let done = 0;
  await Promise.all(clients.map(async (client, c) => {
    const owner = `floor-${c}`;
    for (;;) {
      const { rows } = await client.query<{ id: string }>(design.claim, [batch, owner]);
      if (rows.length === 0) return;
      const ids = rows.map((r) => r.id);
      const renewed = await client.query(design.heartbeat, [ids, owner]);
      const settled = await client.query(design.settle, [ids, owner]);
      if (renewed.rowCount !== ids.length || settled.rowCount !== ids.length) {
        throw new Error(`${design.name}: claimed ${ids.length}, renewed ${renewed.rowCount}, settled ${settled.rowCount}`);
      }
      done += ids.length;
    }
  }));
  return done;
}

async function withClients<T>(url: string, fn: (clients: pg.Client[]) => Promise<T>): Promise<T> {
  const clients = Array.from({ length: CLIENTS }, () => new pg.Client({ connectionString: url }));
  await Promise.all(clients.map((c) => c.connect()));
  try { return await fn(clients); } finally { await Promise.all(clients.map((c) => c.end())); }
}

async function prepare(database: BenchDatabase, design: RowDesign): Promise<void> {
  const pool = new pg.Pool({ connectionString: database.url, max: 1 });
  try {
    await migrate(drizzle(pool) as unknown as Db);
    // The partitions a worker would have made ahead (a day wide, the default retention's), as bench/floors.ts does.
    await pool.query("select akadze.maintain_history(now(), 7 * 86400000, 86400, 172800, 1000)");
    await pool.query("create extension if not exists pg_walinspect");
    for (const statement of design.setup) await pool.query(statement);
  } finally {
    await pool.end();
  }
}

async function checkEmpty(url: string, design: RowDesign, count: number, drains: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const left = (await client.query("select count(*)::int as n from akadze.jobs")).rows[0].n;
    const leased = design.leaseTable ? (await client.query(`select count(*)::int as n from ${design.leaseTable}`)).rows[0].n : 0;
    const history = (await client.query("select count(*)::int as n from akadze.job_history")).rows[0].n;
    if (left !== 0 || leased !== 0 || history !== count * drains) {
      throw new Error(`${design.name}: ${left} jobs and ${leased} leases left, ${history} history rows of ${count * drains}`);
    }
  } finally {
    await client.end();
  }
}

/** One design at one batch: a warm-up drain, a vacuum, then the measured enqueue and drain. */
export async function rowLife(design: RowDesign, count: number, batch: number, round: number): Promise<RowLifeRun> {
  return withDatabase(`rows_${design.name.split(" ")[0]}`, async (database) => {
    await prepare(database, design);
    await withClients(database.url, async ([first, ...rest]) => {
      await enqueueAll(first, design, count);
      await first.query("analyze akadze.jobs");
      const done = await drainAll([first, ...rest], design, batch);
      if (done !== count) throw new Error(`${design.name}: the warm-up ran ${done} of ${count} jobs`);
      // (Autovacuum may be off, as on this machine: every design starts its measured pass from a vacuumed table.)
      await first.query("vacuum analyze");
    });
    await backendsGone(database.name);
    const before = await rowCounts(database.url);
    const measured = await withClients(database.url, async (clients) => {
      const [first] = clients;
      // A temporary slot keeps the window's WAL until it is read (a checkpoint would recycle it); it ends with the session.
      await first.query("select pg_create_physical_replication_slot($1, true, true)", [`akadze_rows_${process.pid}`]);
      const lsn0 = await walLsn(first);
      const cpu0 = await snapshotCpu(database.name);
      const { ms: enqueueMs } = await timed(() => enqueueAll(first, design, count));
      const cpu1 = await snapshotCpu(database.name);
      const lsn1 = await walLsn(first);
      await first.query("analyze akadze.jobs");
      const lsn2 = await walLsn(first);
      const cpu2 = await snapshotCpu(database.name);
      const { ms: processMs, value: done } = await timed(() => drainAll(clients, design, batch));
      const cpu3 = await snapshotCpu(database.name);
      const lsn3 = await walLsn(first);
      if (done !== count) throw new Error(`${design.name}: ran ${done} of ${count} jobs`);
      const enqueueWal = await walWindow(first, lsn0, lsn1);
      const processWal = await walWindow(first, lsn2, lsn3);
      const cpu = (a: typeof cpu0, b: typeof cpu0) => { const ms = cpuSpentMs(a, b); return ms === null ? null : (ms * 1000) / count; };
      return { enqueueMs, processMs, enqueueCpuUs: cpu(cpu0, cpu1), processCpuUs: cpu(cpu2, cpu3), enqueueWal, processWal };
    });
    await backendsGone(database.name);
    const after = await rowCounts(database.url);
    await checkEmpty(database.url, design, count, 2);
    const upd = after.upd - before.upd;
    return {
      design: design.name, batch, round,
      enqueuePerSec: rate(count, measured.enqueueMs), processPerSec: rate(count, measured.processMs),
      enqueueCpuUs: measured.enqueueCpuUs, processCpuUs: measured.processCpuUs,
      enqueueWal: measured.enqueueWal.ownBytes / count, processWal: measured.processWal.ownBytes / count,
      fpiWal: (measured.enqueueWal.ownFpiBytes + measured.processWal.ownFpiBytes) / count,
      serverWal: (measured.enqueueWal.serverBytes + measured.processWal.serverBytes) / count,
      deadMade: (upd + after.del - before.del) / count, hotShare: upd > 0 ? (after.hot - before.hot) / upd : 0,
      updatesPerJob: upd / count, deadLeft: (after.dead - before.dead) / count,
    };
  });
}

const fixed = (n: number | null, digits = 0) => (n === null || Number.isNaN(n) ? "—" : n.toFixed(digits));

function line(r: RowLifeRun): string {
  return `| ${r.design} | ${r.batch} | ${r.round} | ${fixed(r.processPerSec)} | ${fixed(r.enqueuePerSec)} | ${fixed(r.processCpuUs)} | ${fixed(r.enqueueCpuUs)} | ` +
    `${fixed(r.processWal)} | ${fixed(r.enqueueWal)} | ${fixed(r.fpiWal)} | ${fixed(r.serverWal)} | ${fixed(r.updatesPerJob, 2)} | ${fixed(r.hotShare * 100)} % | ` +
    `${fixed(r.deadMade, 2)} | ${fixed(r.deadLeft, 2)} |`;
}

const HEADER = "| design | batch | round | jobs/s (claim+hb+settle) | enqueue jobs/s | PG CPU µs/job: process | enqueue | " +
  "WAL B/job: process | enqueue | of which FPI | server WAL B/job (all clients) | updates/job | HOT | dead versions made/job | dead left/job |\n" +
  "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

/** The median of each column over a design's rounds at one batch. */
function medianOf(runs: RowLifeRun[]): RowLifeRun {
  const m = (f: (r: RowLifeRun) => number | null) => {
    const xs = runs.map(f).filter((x): x is number => x !== null);
    return xs.length === 0 ? null : median(xs);
  };
  return {
    design: runs[0].design, batch: runs[0].batch, round: 0,
    enqueuePerSec: m((r) => r.enqueuePerSec)!, processPerSec: m((r) => r.processPerSec)!,
    enqueueCpuUs: m((r) => r.enqueueCpuUs), processCpuUs: m((r) => r.processCpuUs),
    enqueueWal: m((r) => r.enqueueWal)!, processWal: m((r) => r.processWal)!, fpiWal: m((r) => r.fpiWal)!, serverWal: m((r) => r.serverWal)!,
    deadMade: m((r) => r.deadMade)!, hotShare: m((r) => r.hotShare)!, updatesPerJob: m((r) => r.updatesPerJob)!, deadLeft: m((r) => r.deadLeft)!,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const jobs = Number(process.argv[2] ?? 20_000);
  const batches = (process.argv[3] ?? "100,500").split(",").map(Number);
  const rounds = Number(process.argv[4] ?? 3);
  const only = process.env.ROW_DESIGNS?.split(",");
  const designs = only ? ROW_DESIGNS.filter((d) => only.some((o) => d.name.startsWith(o))) : ROW_DESIGNS;
  const runs: RowLifeRun[] = [];
  console.log(HEADER);
  for (let round = 1; round <= rounds; round++) {
    for (const batch of batches) {
      // Interleaved, and the order rotated each round, so no design always runs first or last.
      const order = designs.map((_, i) => designs[(i + round - 1) % designs.length]);
      for (const design of order) {
        const run = await rowLife(design, jobs, batch, round);
        runs.push(run);
        console.log(line(run));
      }
    }
  }
  console.log(`\nMedians over ${rounds} round(s), ${jobs} jobs, ${CLIENTS} clients:\n`);
  console.log(HEADER.replace("| round ", "| rounds "));
  for (const batch of batches) {
    for (const design of designs) {
      const mine = runs.filter((r) => r.design === design.name && r.batch === batch);
      console.log(line({ ...medianOf(mine), round: mine.length }));
    }
  }
}
