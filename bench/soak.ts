// The soak: a long-lived worker at a steady rate for ten minutes over a history loaded with 10 M rows first.
// It shows that the queue table does not grow with what finished and that claims do not slow down: claim
// latency p50/p99 of the last minute against the first, the queue table's size and dead rows over time,
// and the history rows retention removed per second (whole partitions).
//   npx tsx bench/soak.ts                                   # 10 min, 1,000 jobs/s, 10 M history rows, retention 10m
//   npx tsx bench/soak.ts --minutes 1 --history 200000 --rate 500    # a short smoke run
import { parseArgs } from "node:util";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, migrate, runWorker, type Db } from "../src/index.js";
import { historyPartitioning } from "../src/core/retention.js";
import { parseDuration } from "../src/core/duration.js";
import { withDatabase } from "./databases.js";
import { percentile } from "./stats.js";
import { CLAIM_MARK } from "../src/sql/claim/claim.js";

const { values: args } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    rate: { type: "string", default: "1000" },
    history: { type: "string", default: "10000000" },
    retention: { type: "string", default: "10m" },
    slots: { type: "string", default: "10" },
  },
});
const MINUTES = Number(args.minutes);
const RATE = Number(args.rate);
const HISTORY = Number(args.history);
const RETENTION = args.retention as `${number}m`;
const SLOTS = Number(args.slots);

interface Sample { s: number; live: number; heapKb: number; indexesKb: number; dead: number; history: number; partitions: number; claims: number }

async function main(): Promise<void> {
  await withDatabase("soak", async (database) => {
    const pool = new pg.Pool({ connectionString: database.url, max: 12 });
    // Every claim's round trip, timed where the driver sends it (the claim is the statement with the candidates).
    const claims: { at: number; ms: number }[] = [];
    const query = pool.query.bind(pool) as (...a: unknown[]) => Promise<unknown>;
    (pool as unknown as { query: (...a: unknown[]) => Promise<unknown> }).query = async (...a: unknown[]) => {
      const text = typeof a[0] === "string" ? a[0] : (a[0] as { text?: string })?.text ?? "";
      if (!text.includes(CLAIM_MARK)) return query(...a);
      const began = performance.now();
      try { return await query(...a); } finally { claims.push({ at: performance.now(), ms: performance.now() - began }); }
    };
    const db = drizzle(pool) as unknown as Db;
    await migrate(db);
    const keepMs = parseDuration(RETENTION);
    const plan = historyPartitioning(keepMs);
    // The history first: HISTORY rows finished over the last retention, in the partitions a worker makes.
    console.error(`loading ${HISTORY} history rows (finished over the last ${RETENTION}, ${plan.widthMs / 1000} s partitions)`);
    await pool.query(`do $$ declare lo bigint := floor(extract(epoch from now() - interval '${keepMs} milliseconds') / ${plan.widthMs / 1000}) * ${plan.widthMs / 1000};
      begin while lo < extract(epoch from now()) loop perform akadze.create_history_partition(lo, lo + ${plan.widthMs / 1000}); lo := lo + ${plan.widthMs / 1000}; end loop; end $$`);
    await pool.query("select akadze.maintain_history(now(), $1, $2, $3, 1000)", [keepMs, plan.widthMs / 1000, Math.ceil(plan.aheadMs / 1000)]);
    for (let done = 0; done < HISTORY; done += 500_000) {
      const n = Math.min(500_000, HISTORY - done);
      await pool.query(`insert into akadze.job_history (id, task, queue, args, state, priority, attempt, max_attempts, run_at, cancel_requested, errors, created_at, started_at, finished_at)
        select -(${done} + g), 'bench.noop', 'default', '{}', 'succeeded', 0, 1, 3, t, false, '[]', t, t, t
        from generate_series(1, ${n}) g, lateral (select now() - (${keepMs} * random()) * interval '1 millisecond' as t) x`);
    }
    await pool.query("analyze akadze.job_history");

    const app = createApp();
    const noop = app.task("bench.noop", async () => {});
    const stop = new AbortController();
    const worker = runWorker(app, { db, slots: SLOTS, retention: { finished: RETENTION }, signal: stop.signal, onError: (e) => console.error(e) });
    const samples: Sample[] = [];
    const began = performance.now();
    let sent = 0;
    let sampled = -Infinity;
    while (performance.now() - began < MINUTES * 60_000) {
      const elapsed = performance.now() - began;
      const due = Math.floor((elapsed / 1000) * RATE) - sent;
      if (due > 0) { await noop.using(db).enqueueMany(Array.from({ length: due }, () => ({}))); sent += due; }
      if (elapsed - sampled >= 5000) {
        sampled = elapsed;
        const { rows: [row] } = await pool.query(`select (select count(*)::int from akadze.jobs) as live,
          pg_relation_size('akadze.jobs') / 1024 as heap_kb, (pg_total_relation_size('akadze.jobs') - pg_relation_size('akadze.jobs')) / 1024 as indexes_kb,
          (select n_dead_tup::int from pg_stat_user_tables where relid = 'akadze.jobs'::regclass) as dead,
          (select count(*)::int from akadze.job_history) as history,
          (select count(*)::int from pg_inherits where inhparent = 'akadze.job_history'::regclass) as partitions`);
        samples.push({ s: Math.round(elapsed / 1000), live: row.live, heapKb: Number(row.heap_kb), indexesKb: Number(row.indexes_kb), dead: row.dead,
          history: row.history, partitions: row.partitions, claims: claims.length });
        console.error(JSON.stringify(samples.at(-1)));
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    stop.abort();
    const summary = await worker;
    const start = claims[0]?.at ?? began;
    const window = (from: number, to: number) => claims.filter((c) => c.at - start >= from && c.at - start < to).map((c) => c.ms);
    const first = window(0, 60_000);
    const end = claims.at(-1)?.at ?? start;
    const last = window(end - start - 60_000, Infinity);
    const stat = (xs: number[]) => ({ n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99) });
    const loaded = HISTORY + sent;
    const remaining = samples.at(-1)?.history ?? 0;
    console.table(samples);
    console.log(JSON.stringify({
      minutes: MINUTES, rate: RATE, historyLoaded: HISTORY, retention: RETENTION, sent, succeeded: summary.succeeded,
      claimFirstMinute: stat(first), claimLastMinute: stat(last),
      p50Change: stat(last).p50 / stat(first).p50 - 1, p99Change: stat(last).p99 / stat(first).p99 - 1,
      historyPrunedPerSec: (loaded - remaining - (sent - summary.succeeded)) / (MINUTES * 60),
    }, null, 2));
    await pool.end();
  });
}

main().then(() => process.exit(0), (error) => { console.error(error); process.exit(1); });
