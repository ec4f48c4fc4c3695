// What fairness costs one claim (issue 38, item 3): a fair claim against a plain claim of the same batch, over
// the same queued rows, with 100 and with 10,000 fairness keys: the fair one in a database where they are keyed
// jobs with their turns, the plain one in another where the same rows have no key (a plain claim reads no keyed
// job with a turn). Both statements are captured as the runtime sends them (a later claim of an invocation, so the
// first claim's riders weigh on neither), then run alternately in transactions that are rolled back, so every run
// sees the same rows and the same cursor. `npm run bench` runs it in its fairness section (batch 250, both layouts).
//
//   npx tsx bench/fair-claim-cost.ts                 # keys 100 and 10,000, batches 50 and 250, 30 runs each
//   npx tsx bench/fair-claim-cost.ts --quick         # keys 100 and 2,000, batch 50, 8 runs: a smoke test
//   npx tsx bench/fair-claim-cost.ts --keys 100,10000 --batches 250 --runs 40 --jobs 500000 --layouts mixed
//   npx tsx bench/fair-claim-cost.ts --keys 100 --batches 250 --delayed 1000x1000   # beside keys whose jobs are all delayed
//   npx tsx bench/fair-claim-cost.ts --keys 100 --batches 250 --unkeyed 10000        # beside due jobs without a key
import pg from "pg";
import { sql, type SQL } from "drizzle-orm";
import * as v from "valibot";
import { createApp, runOnce, type Db } from "../src/index.js";
import { openAkadze, type AkadzeTarget } from "./akadze-db.js";
import { fairProbes, type PlanNode } from "../test/support/plan-nodes.js";
import { median } from "./stats.js";
import { PG_HOST, PG_PORT, rolledBack } from "./databases.js";

export interface FairCostSettings {
  keys: number[];
  batches: number[];
  /** Queued jobs in all (spread evenly over the keys, at least one a key). */
  jobs: number;
  /** Runs of each statement, alternating fair and plain. */
  runs: number;
  /**
   * How the rows lie in the table: `bursts`, each key's jobs inserted together (one tenant's burst: a key's
   * next job is on a page of its own, the worst case for a fair claim); `mixed`, keys taking turns row by row
   * (tenants enqueueing side by side: the keys' next jobs share pages, as the plain claim's do).
   */
  layouts: Layout[];
  /**
   * Keys whose jobs are all delayed (a day and more), beside the due ones: `keys` of `perKey` jobs each, named after
   * the due keys (`t000001d` sorts right after `t000001`), so the walk meets them between due keys, and those past
   * the due keys' count after the last one. Absent: none.
   */
  delayed?: { keys: number; perKey: number };
  /**
   * Due jobs without a key queued beside, in both databases (0 or absent: none): the fair claim then carries its
   * plain scan (a process leaves it out only while no job without a turn is due).
   */
  unkeyed?: number;
}

export type Layout = "bursts" | "mixed";

export interface FairCostRow {
  layout: Layout;
  keys: number;
  batch: number;
  queued: number;
  /** Jobs of keys with only delayed jobs, queued beside (0: none). */
  delayed: number;
  /** Due jobs without a key, queued beside (0: none). */
  unkeyed: number;
  /**
   * Medians over the runs: server time from EXPLAIN (ANALYZE, TIMING OFF); the statement's wall time on one
   * connection sent as a named prepared statement, as the runtime sends claims over node-postgres (planned once
   * a connection, or a generic plan), and unprepared, as over neon-http (planned every time).
   */
  plainPlanningMs: number;
  plainExecutionMs: number;
  plainPreparedMs: number;
  plainUnpreparedMs: number;
  fairPlanningMs: number;
  fairExecutionMs: number;
  fairPreparedMs: number;
  fairUnpreparedMs: number;
  /** fair ÷ plain: execution alone, planning + execution, prepared wall, unprepared wall. */
  executionRatio: number;
  serverRatio: number;
  preparedRatio: number;
  unpreparedRatio: number;
  /** Index scans of jobs_fair_idx in the fair plan (loops summed): the walk's probes and each key's share. */
  fairIndexProbes: number;
  /** Shared buffers the fair and plain statements touched (hit + read). */
  fairBuffers: number;
  plainBuffers: number;
  /** Jobs each claim took, and distinct keys among them. */
  plainClaimed: number;
  plainKeys: number;
  fairClaimed: number;
  fairKeys: number;
}

const Tenant = v.object({ tenant: v.string() });

type Captured = { text: string; values: unknown[] };

/** The last claim of a draining invocation over `jobs` jobs of `batch` (the first and second took them; the last is a later claim). */
async function captureLaterClaim(target: AkadzeTarget, fair: boolean, batch: number, unkeyed = false): Promise<Captured> {
  const app = createApp();
  const work = app.task("bench.tenant", { args: Tenant }, async () => {});
  await work.using(target.db, fair ? { fairKey: "capture" } : {}).enqueueMany(Array.from({ length: 2 * batch }, () => ({ tenant: "capture" })));
  // (A due job without a key that this app does not run: each fair claim sees one due and the next carries its plain scan.)
  const other = createApp().task("bench.other", { args: Tenant }, async () => {});
  if (unkeyed) await other.using(target.db).enqueue({ tenant: "other" });
  // A process first learns there are no keyed jobs from one claim: a plain capture drains twice.
  if (!fair) await runOnce(app, { db: target.db, batchSize: batch, slots: batch, drain: false });
  target.counter!.reset();
  await runOnce(app, { db: target.db, batchSize: batch, slots: batch, budget: Infinity });
  const claim = target.counter!.lastClaim;
  if (!claim) throw new Error("fair-claim-cost: no claim captured");
  if (claim.text.includes("fair_candidates as (") !== fair) throw new Error(`fair-claim-cost: captured a ${fair ? "plain" : "fair"} claim where a ${fair ? "fair" : "plain"} one was expected`);
  return claim;
}

/** The name of the `k`th due key (`t000001`): in key order, the keys' numbers' order. */
const KEY_NAME = sql`'t' || lpad(k::text, 6, '0')`;

/**
 * `keys` keys of `perKey` queued no-op jobs each, due a minute ago, in `layout`, each with its turn (its number
 * within its key, from 0: what one enqueue of them all gives); and the `delayed` keys' jobs, parked (no turn), as an
 * enqueue for later leaves them. Not `keyed`: the same rows without a key or a turn.
 */
export async function loadJobs(db: Db, keys: number, perKey: number, layout: Layout, delayed?: FairCostSettings["delayed"], keyed = true, unkeyed = 0): Promise<void> {
  // (Due jobs without a key first, each due a moment after the one before, all before the keyed jobs' due time.)
  if (unkeyed > 0) {
    await db.execute(sql`insert into akadze.jobs (task, queue, args, run_at)
      select 'bench.tenant', 'default', '{}'::jsonb, now() - interval '2 minutes' + i * interval '1 millisecond' from generate_series(1, ${unkeyed}::int) i`);
  }
  await db.execute(sql`insert into akadze.jobs (task, queue, args, run_at, fair_key, fair_tag)
    select 'bench.tenant', 'default', jsonb_build_object('tenant', k), now() - interval '1 minute',
      ${keyed ? sql`${KEY_NAME}, j - 1` : sql`null, null`}
    from generate_series(1, ${keys}::int) k, generate_series(1, ${perKey}::int) j ${layout === "bursts" ? sql`order by k, j` : sql`order by j, k`}`);
  // (Each due a second after the one before: a tenant's delayed jobs rarely share a moment, and equal index
  // entries would be stored once, deduplicated, and cost a scan nearly nothing.)
  if (delayed) {
    await db.execute(sql`insert into akadze.jobs (task, queue, args, run_at, fair_key)
      select 'bench.tenant', 'default', '{}'::jsonb, now() + interval '1 day' + j * interval '1 second', ${keyed ? sql`${KEY_NAME} || 'd'` : sql`null`}
      from generate_series(1, ${delayed.keys}::int) k, generate_series(1, ${delayed.perKey}::int) j`);
  }
  await db.execute(sql`analyze akadze.jobs`);
}

async function runOne(client: pg.Client, claim: Captured) {
  return rolledBack(client, async () => {
    const explained = await client.query(`explain (analyze, timing off, buffers, format json) ${claim.text}`, claim.values);
    const plan = (explained.rows[0]["QUERY PLAN"] as { Plan: PlanNode; "Planning Time": number; "Execution Time": number }[])[0];
    const served = (await client.query("select count(*)::int as n, count(distinct fair_key)::int as keys from akadze.jobs where state = 'running'")).rows[0];
    return {
      planning: plan["Planning Time"], execution: plan["Execution Time"], probes: fairProbes(plan.Plan),
      buffers: (plan.Plan["Shared Hit Blocks"] ?? 0) + (plan.Plan["Shared Read Blocks"] ?? 0), claimed: served.n as number, keys: served.keys as number,
    };
  });
}

async function wallOne(client: pg.Client, claim: Captured, name?: string): Promise<number> {
  return rolledBack(client, async () => {
    const started = performance.now();
    await client.query(name === undefined ? { text: claim.text, values: claim.values } : { name, text: claim.text, values: claim.values });
    return performance.now() - started;
  });
}

/** One row per layout × keys × batch, each in a fresh database. */
export async function fairClaimCosts(s: FairCostSettings, log: (line: string) => void = () => {}): Promise<FairCostRow[]> {
  const rows: FairCostRow[] = [];
  for (const layout of s.layouts) {
    for (const keys of s.keys) {
      for (const batch of s.batches) {
        const row = await measure(layout, keys, batch, s);
        rows.push(row);
        log(formatRow(row));
      }
    }
  }
  return rows;
}

async function measure(layout: Layout, keys: number, batch: number, s: FairCostSettings): Promise<FairCostRow> {
  const target = await openAkadze("node-postgres", `fcc${layout}${keys}b${batch}`, { poolSize: 4 });
  const plainTarget = await openAkadze("node-postgres", `fcc${layout}${keys}b${batch}p`, { poolSize: 4 });
  try {
    const unkeyed = s.unkeyed ?? 0;
    const plain = await captureLaterClaim(plainTarget, false, batch);
    const fair = await captureLaterClaim(target, true, batch, unkeyed > 0);
    if (unkeyed > 0) await target.db.execute(sql`delete from akadze.jobs where task = 'bench.other'`);
    const perKey = Math.max(1, Math.round(s.jobs / keys));
    await loadJobs(target.db, keys, perKey, layout, s.delayed, true, unkeyed);
    await loadJobs(plainTarget.db, keys, perKey, layout, s.delayed, false, unkeyed);
    // The cursor halfway through the keys, as after claims went before: the walk then serves other keys than the
    // plain scan's first jobs (from the start, both would take the same keys' first jobs).
    await target.db.execute(sql`insert into akadze.fair_cursor (id, key) select 1, ${KEY_NAME} from (select ${Math.floor(keys / 2)}::int as k) h
      on conflict (id) do update set key = excluded.key`);
    const client = new pg.Client({ connectionString: `postgres://postgres@${PG_HOST}:${PG_PORT}/${target.database}` });
    const plainClient = new pg.Client({ connectionString: `postgres://postgres@${PG_HOST}:${PG_PORT}/${plainTarget.database}` });
    await client.connect();
    await plainClient.connect();
    try {
      type Run = Awaited<ReturnType<typeof runOne>> & { prepared: number; unprepared: number };
      const run = async (on: pg.Client, claim: Captured, name: string): Promise<Run> =>
        ({ ...(await runOne(on, claim)), prepared: await wallOne(on, claim, name), unprepared: await wallOne(on, claim) });
      const plainOnce = () => run(plainClient, plain, "plain");
      const fairOnce = () => run(client, fair, "fair");
      // Unrecorded runs warm the caches and let the prepared statements settle on their plans (a generic plan
      // comes after five executions).
      for (let i = 0; i < 6; i++) { await plainOnce(); await fairOnce(); }
      const p: Run[] = [], f: Run[] = [];
      for (let i = 0; i < s.runs; i++) {
        // Alternating which goes first, so a drift in the machine's load weighs on both.
        if (i % 2 === 0) { p.push(await plainOnce()); f.push(await fairOnce()); }
        else { f.push(await fairOnce()); p.push(await plainOnce()); }
      }
      const m = (list: Run[], k: "planning" | "execution" | "probes" | "buffers" | "prepared" | "unprepared") => median(list.map((x) => x[k]));
      const server = (list: Run[]) => median(list.map((x) => x.planning + x.execution));
      return {
        layout, keys, batch, queued: keys * perKey, delayed: s.delayed ? s.delayed.keys * s.delayed.perKey : 0, unkeyed,
        plainPlanningMs: m(p, "planning"), plainExecutionMs: m(p, "execution"), plainPreparedMs: m(p, "prepared"), plainUnpreparedMs: m(p, "unprepared"),
        fairPlanningMs: m(f, "planning"), fairExecutionMs: m(f, "execution"), fairPreparedMs: m(f, "prepared"), fairUnpreparedMs: m(f, "unprepared"),
        executionRatio: m(f, "execution") / m(p, "execution"), serverRatio: server(f) / server(p),
        preparedRatio: m(f, "prepared") / m(p, "prepared"), unpreparedRatio: m(f, "unprepared") / m(p, "unprepared"),
        fairIndexProbes: m(f, "probes"), fairBuffers: m(f, "buffers"), plainBuffers: m(p, "buffers"),
        plainClaimed: p[0].claimed, plainKeys: p[0].keys, fairClaimed: f[0].claimed, fairKeys: f[0].keys,
      };
    } finally {
      await client.end();
      await plainClient.end();
    }
  } finally {
    await target.close();
    await plainTarget.close();
  }
}

const f2 = (x: number) => x.toFixed(2);

export function formatRow(r: FairCostRow): string {
  return `${r.layout}, keys ${r.keys}, batch ${r.batch}, ${r.queued} queued${r.delayed > 0 ? ` beside ${r.delayed} delayed` : ""}${r.unkeyed > 0 ? ` beside ${r.unkeyed} due without a key` : ""} | plain: plan ${f2(r.plainPlanningMs)} + exec ${f2(r.plainExecutionMs)} ms, ` +
    `prepared ${f2(r.plainPreparedMs)}, unprepared ${f2(r.plainUnpreparedMs)} ms | fair: plan ${f2(r.fairPlanningMs)} + exec ${f2(r.fairExecutionMs)} ms, ` +
    `prepared ${f2(r.fairPreparedMs)}, unprepared ${f2(r.fairUnpreparedMs)} ms | fair/plain: exec ${f2(r.executionRatio)}x, plan+exec ${f2(r.serverRatio)}x, ` +
    `prepared ${f2(r.preparedRatio)}x, unprepared ${f2(r.unpreparedRatio)}x | buffers ${r.plainBuffers} / ${r.fairBuffers}, fairness index scans ${r.fairIndexProbes}, ` +
    `claimed ${r.plainClaimed} jobs of ${r.plainKeys} keys / ${r.fairClaimed} of ${r.fairKeys}`;
}

/** `--delayed KEYSxPER_KEY` (e.g. 1000x1000), or none. */
function delayedOption(value: string | undefined): FairCostSettings["delayed"] {
  if (value === undefined) return undefined;
  const match = /^(\d+)x(\d+)$/.exec(value);
  if (!match) throw new Error(`--delayed ${value}: expected KEYSxPER_KEY, e.g. 1000x1000`);
  return { keys: Number(match[1]), perKey: Number(match[2]) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const quick = args.includes("--quick");
  const option = (name: string) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : undefined; };
  const list = (name: string, fallback: number[]) => option(name)?.split(",").map(Number) ?? fallback;
  const settings: FairCostSettings = {
    keys: list("--keys", quick ? [100, 2_000] : [100, 10_000]),
    batches: list("--batches", quick ? [50] : [50, 250]),
    jobs: Number(option("--jobs") ?? (quick ? 20_000 : 100_000)),
    runs: Number(option("--runs") ?? (quick ? 8 : 30)),
    layouts: (option("--layouts")?.split(",") as Layout[] | undefined) ?? ["mixed", "bursts"],
    delayed: delayedOption(option("--delayed")),
    unkeyed: Number(option("--unkeyed") ?? 0),
  };
  console.log(`fair claim cost: ${JSON.stringify(settings)}`);
  await fairClaimCosts(settings, (line) => console.log(line));
}
