// Issue 27's fairness: how long the jobs of 100 small tenants wait behind one tenant's burst of 50,000, with
// fairness keys and without (4 concurrent invocations, one claim each per call), and what a fair claim costs
// Postgres with 100 and with 10,000 keys queued (EXPLAIN ANALYZE of the claim: time, and probes of jobs_fair_idx).
import pg from "pg";
import { sql } from "drizzle-orm";
import * as v from "valibot";
import { createApp, runOnce } from "../src/index.js";
import { PG_HOST, PG_PORT } from "../test/support/postgres.js";
import { query } from "../src/db/query.js";
import { openAkadze } from "./akadze-db.js";
import { fairProbes, type PlanNode } from "../test/support/plan-nodes.js";
import { median, percentile, timed } from "./stats.js";

export interface FairnessSettings {
  bigJobs: number;
  smallKeys: number;
  smallJobsPerKey: number;
  invocations: number;
  batchSize: number;
  /** The key counts a claim's cost is measured at, the jobs queued over them (spread evenly), and claims explained. */
  costKeys: number[];
  costJobs: number;
  explains: number;
}

export interface FairnessRow {
  /** "fair" (every job under its tenant's fairness key) or "plain" (no keys: today's claim order). */
  mode: "fair" | "plain";
  smallJobs: number;
  /** The small tenants' wait, from the moment every job is queued to its handler's start. */
  smallWaitP50Ms: number;
  smallWaitP95Ms: number;
  /** One runOnce call's wall time (one claim of `batchSize`, its starts and its settle), median over the whole drain. */
  claimCycleMs: number;
  /** The p95 wait in claim cycles: the goal is under 2. */
  p95InCycles: number;
  /** Jobs of the big tenant started before the small tenants' last one. */
  bigStartedBefore: number;
  /** Claims each invocation had made, on average, when the small tenants' last job started (its own claim counted). */
  claimsPerInvocation: number;
}

export interface FairClaimCost {
  mode: "fair" | "plain";
  keys: number;
  queued: number;
  /** EXPLAIN (ANALYZE) of one claim of `batchSize`, medians over the explains. */
  planningMs: number;
  executionMs: number;
  /** Index scans of jobs_fair_idx in the plan (loops summed): the walk's probes and each key's lateral. */
  fairIndexProbes: number;
  /** Distinct keys among the jobs the explained claim took. */
  keysServed: number;
  claimed: number;
}

const Tenant = v.object({ tenant: v.string() });

/** The burst scenario in one mode: enqueue, then `invocations` concurrent loops of one-claim runOnce calls until the queue is empty. */
export async function fairnessWaits(mode: "fair" | "plain", s: FairnessSettings): Promise<FairnessRow> {
  const target = await openAkadze("node-postgres", `fair${mode}`);
  try {
    const app = createApp();
    const starts: { tenant: string; at: number }[] = [];
    let bigStarted = 0, bigAtLastSmall = 0, claimsSent = 0, claimsAtLastSmall = 0;
    const smallTotal = s.smallKeys * s.smallJobsPerKey;
    const work = app.task("bench.tenant", { args: Tenant }, async ({ tenant }) => {
      if (tenant === "big") bigStarted++;
      else {
        starts.push({ tenant, at: performance.now() });
        if (starts.length === smallTotal) { bigAtLastSmall = bigStarted; claimsAtLastSmall = claimsSent; }
      }
    });
    const enqueue = (tenant: string, n: number) =>
      work.using(target.db, mode === "fair" ? { fairKey: tenant } : {}).enqueueMany(Array.from({ length: n }, () => ({ tenant })));
    await enqueue("big", s.bigJobs);
    for (let i = 0; i < s.smallKeys; i++) await enqueue(`small-${String(i).padStart(4, "0")}`, s.smallJobsPerKey);
    // The process's first calls check the schema, learn whether keyed jobs exist and open the connections the
    // loops will use; the statistics are those of a table already in use. Not claim cycles to count: the measure
    // is the claim order, in claim cycles, and a first cold cycle would weigh on the p95 wait alone.
    await Promise.all(Array.from({ length: s.invocations * 2 }, () => runOnce(app, { db: target.db, queues: ["bench.warm-up"] })));
    await query(target.db, sql`analyze akadze.jobs`);
    const queuedAt = performance.now();
    const cycles: number[] = [];
    const loop = async () => {
      for (;;) {
        claimsSent++;
        const { ms, value } = await timed(() => runOnce(app, { db: target.db, batchSize: s.batchSize, slots: s.batchSize, drain: false }));
        cycles.push(ms);
        if (value.claimed === 0) break;
      }
    };
    await Promise.all(Array.from({ length: s.invocations }, loop));
    const smallStarts = starts;
    const waits = smallStarts.map((x) => x.at - queuedAt);
    const p95 = percentile(waits, 95);
    const cycle = median(cycles);
    return {
      mode, smallJobs: smallStarts.length, smallWaitP50Ms: percentile(waits, 50), smallWaitP95Ms: p95, claimCycleMs: cycle,
      p95InCycles: p95 / cycle, bigStartedBefore: bigAtLastSmall, claimsPerInvocation: claimsAtLastSmall / s.invocations,
    };
  } finally {
    await target.close();
  }
}

/** One claim of `batchSize` over `keys` keys sharing `costJobs` jobs, fair or plain, explained in rolled-back transactions. */
export async function fairClaimCost(mode: "fair" | "plain", keys: number, s: FairnessSettings): Promise<FairClaimCost> {
  const target = await openAkadze("node-postgres", `fcost${mode}${keys}`);
  try {
    const app = createApp();
    const work = app.task("bench.tenant", { args: Tenant }, async () => {});
    const perKey = Math.ceil(s.costJobs / keys);
    const jobs = (tenant: string) => Array.from({ length: perKey }, () => ({ tenant }));
    for (let i = 0; i < keys; i += 500) {
      // One statement per key (a key is an enqueue option), sent 500 at a time.
      await Promise.all(Array.from({ length: Math.min(500, keys - i) }, (_, k) => {
        const tenant = `t${String(i + k).padStart(5, "0")}`;
        return work.using(target.db, mode === "fair" ? { fairKey: tenant } : {}).enqueueMany(jobs(tenant));
      }));
    }
    await target.db.execute(sql`analyze akadze.jobs`);
    // Warm up and capture a claim as the runtime sends it (a later claim: the process knows whether keys exist).
    await runOnce(app, { db: target.db, batchSize: s.batchSize, slots: s.batchSize, drain: false });
    target.counter!.reset();
    await runOnce(app, { db: target.db, batchSize: s.batchSize, slots: s.batchSize, drain: false });
    const claim = target.counter!.firstClaim;
    if (!claim) throw new Error("fairness bench: no claim captured");
    const client = new pg.Client({ connectionString: `postgres://postgres@${PG_HOST}:${PG_PORT}/${target.database}` });
    await client.connect();
    try {
      const planning: number[] = [], execution: number[] = [], probes: number[] = [];
      let served = 0, claimed = 0;
      const queued = Number((await client.query("select count(*) from akadze.jobs where state = 'queued'")).rows[0].count);
      for (let i = 0; i < s.explains; i++) {
        await client.query("begin");
        try {
          const result = await client.query(`explain (analyze, format json) ${claim.text}`, claim.values);
          const plan = (result.rows[0]["QUERY PLAN"] as { Plan: PlanNode; "Planning Time": number; "Execution Time": number }[])[0];
          planning.push(plan["Planning Time"]);
          execution.push(plan["Execution Time"]);
          probes.push(fairProbes(plan.Plan));
          const r = (await client.query("select count(*)::int as n, count(distinct args->>'tenant')::int as keys from akadze.jobs where state = 'running'")).rows[0];
          served = r.keys;
          claimed = r.n;
        } finally {
          await client.query("rollback");
        }
      }
      return { mode, keys, queued, planningMs: median(planning), executionMs: median(execution), fairIndexProbes: median(probes), keysServed: served, claimed };
    } finally {
      await client.end();
    }
  } finally {
    await target.close();
  }
}

