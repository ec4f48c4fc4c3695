// Retention keeps up at any rate: a worker under a steady 1,000 jobs/s for a minute. This measures a bound
// under real load (about a minute of it); it asserts no timing, only what stays in the tables.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApp, runWorker } from "../../../src/index.js";
import { openTestDatabase, type TestDatabase } from "../../support/database.js";

const RATE = 1000;
const SECONDS = Number(process.env.AKADZE_RETENTION_LOAD_SECONDS ?? 60);
const RETENTION_S = 5;

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("retention_load"); });
afterAll(async () => { await t?.close(); });

it(`a worker with retention 5s under ${RATE} jobs/s for ${SECONDS} s keeps at most rate × retention finished rows older than 3 × retention, and the queue table stays bounded by live jobs`, async () => {
  const app = createApp();
  const noop = app.task("noop", async () => {});
  const stop = new AbortController();
  const worker = runWorker(app, { db: t.db, slots: 10, retention: { finished: `${RETENTION_S}s` }, signal: stop.signal, onError: () => {} });
  const samples: { at: number; old: number; history: number; live: number; heap: number; dead: number }[] = [];
  const began = performance.now();
  let sent = 0;
  let sampled = 0;
  // The load: every 50 ms, the jobs due by then at RATE per second (it catches up if a tick came late).
  await new Promise<void>((resolve, reject) => {
    let busy = false;
    const tick = setInterval(() => {
      if (busy) return;
      busy = true;
      (async () => {
        const elapsed = performance.now() - began;
        if (elapsed >= SECONDS * 1000) { clearInterval(tick); resolve(); return; }
        const due = Math.floor((elapsed / 1000) * RATE) - sent;
        if (due > 0) { await noop.using(t.db).enqueueMany(Array.from({ length: due }, () => ({}))); sent += due; }
        if (elapsed - sampled >= 1000) {
          sampled = elapsed;
          const [row] = await t.rows(`select
            (select count(*)::int from akadze.job_history where finished_at < now() - interval '${3 * RETENTION_S} seconds') as old,
            (select count(*)::int from akadze.job_history) as history,
            (select count(*)::int from akadze.jobs) as live,
            pg_relation_size('akadze.jobs') as heap,
            (select n_dead_tup::int from pg_stat_user_tables where relid = 'akadze.jobs'::regclass) as dead`);
          samples.push({ at: Math.round(elapsed / 1000), old: row.old, history: row.history, live: row.live, heap: Number(row.heap), dead: row.dead });
        }
      })().then(() => { busy = false; }, (error) => { clearInterval(tick); reject(error); });
    }, 50);
  });
  stop.abort();
  const summary = await worker;
  console.log(`sent ${sent}, worker ran ${summary.succeeded}`);
  console.table(samples);

  // The bound the issue sets: at most rate × retention finished rows older than three times the retention, at any sample.
  expect(Math.max(...samples.map((s) => s.old))).toBeLessThanOrEqual(RATE * RETENTION_S);
  // The history holds what finished within the horizon plus its partitions' width and the maintenance
  // interval (1 s each here), not everything that ran.
  const settled = samples.filter((s) => s.at >= 3 * RETENTION_S);
  expect(Math.max(...settled.map((s) => s.history))).toBeLessThanOrEqual(RATE * 3 * RETENTION_S);
  expect(summary.succeeded).toBeGreaterThan(sent / 2);
  // The queue table holds only live jobs (its check allows nothing else), so it never grows with what
  // finished: its rows stay at the backlog, far below the jobs that ran.
  expect(Math.max(...samples.map((s) => s.live))).toBeLessThan(sent / 4);
  // Its heap does not grow with time either: the claims start a vacuum once the dead rows (two per job)
  // pile up, so the last 20 s need no more room than the first 20 s did (without it the heap grew ~10 MB a
  // minute here, linearly, until autovacuum's first look).
  const heapUpTo = (from: number, to: number) => Math.max(...samples.filter((s) => s.at > from && s.at <= to).map((s) => s.heap));
  expect(heapUpTo(SECONDS - 20, SECONDS)).toBeLessThanOrEqual(2 * heapUpTo(0, 20));
}, (SECONDS + 120) * 1000);
