// Issue 27's fairness: how long the jobs of 100 small tenants wait behind one tenant's burst of 50,000, with
// fairness keys and without (4 concurrent invocations, one claim each per call), over several bursts. What a fair
// claim costs against a plain one is fair-claim-cost.ts.
import { sql } from "drizzle-orm";
import * as v from "valibot";
import { createApp, runOnce } from "../src/index.js";
import { query } from "../src/db/query.js";
import { openAkadze } from "./akadze-db.js";
import { median, medianRow, percentile, timed } from "./stats.js";

export interface FairnessSettings {
  bigJobs: number;
  smallKeys: number;
  smallJobsPerKey: number;
  invocations: number;
  batchSize: number;
  /** The key counts a claim's cost is measured at (fair-claim-cost.ts), the jobs queued over them, and the runs of each statement. */
  costKeys: number[];
  costJobs: number;
  costRuns: number;
  /** Keys with only delayed jobs beside the fewest keys' due ones, for one more cost row (fair-claim-cost.ts `delayed`). */
  costDelayed: { keys: number; perKey: number };
  /** Due jobs without a key beside the fewest keys' due ones, for one more cost row (fair-claim-cost.ts `unkeyed`). */
  costUnkeyed: number;
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

/** One mode's bursts (`fairnessBursts`): every field above is the median of the bursts', each burst's two ratios beside. */
export interface FairnessMedians extends FairnessRow {
  p95InCyclesEach: number[];
  claimsPerInvocationEach: number[];
}

/**
 * The burst `rounds` times in each mode, the modes interleaved (fair, plain, fair, ...), each in a fresh database:
 * one burst's p95 wait turns on its first round of claims, sent by all the loops at once, and on this machine
 * it ranged from 1.2 to 4.3 claim cycles from one burst to the next (2026-12-05), so a single burst says little.
 */
export async function fairnessBursts(s: FairnessSettings, rounds: number): Promise<FairnessMedians[]> {
  const runs = { fair: [] as FairnessRow[], plain: [] as FairnessRow[] };
  for (let round = 0; round < rounds; round++) for (const mode of ["fair", "plain"] as const) runs[mode].push(await fairnessWaits(mode, s));
  return (["fair", "plain"] as const).map((mode) => ({
    ...medianRow(runs[mode]),
    p95InCyclesEach: runs[mode].map((x) => x.p95InCycles), claimsPerInvocationEach: runs[mode].map((x) => x.claimsPerInvocation),
  }));
}

const Tenant = v.object({ tenant: v.string() });

/** The tenant whose jobs the warm-up rounds claim (its jobs are not counted). */
const WARM_UP = "warm-up";
/** How many rounds of the loops' own calls the warm-up takes, before the burst is queued. */
export const WARM_UP_ROUNDS = 3;

/** The burst scenario in one mode: enqueue, then `invocations` concurrent loops of one-claim runOnce calls until the queue is empty. */
export async function fairnessWaits(mode: "fair" | "plain", s: FairnessSettings): Promise<FairnessRow> {
  const target = await openAkadze("node-postgres", `fair${mode}`);
  try {
    const app = createApp();
    const starts: { tenant: string; at: number }[] = [];
    let bigStarted = 0, bigAtLastSmall = 0, claimsSent = 0, claimsAtLastSmall = 0;
    const smallTotal = s.smallKeys * s.smallJobsPerKey;
    const work = app.task("bench.tenant", { args: Tenant }, async ({ tenant }) => {
      if (tenant === WARM_UP) return;
      if (tenant === "big") bigStarted++;
      else {
        starts.push({ tenant, at: performance.now() });
        if (starts.length === smallTotal) { bigAtLastSmall = bigStarted; claimsAtLastSmall = claimsSent; }
      }
    });
    // One loop's call: one claim of the batch, its starts and its settle.
    const call = () => runOnce(app, { db: target.db, batchSize: s.batchSize, slots: s.batchSize, drain: false });
    const enqueue = (tenant: string, n: number) =>
      work.using(target.db, mode === "fair" ? { fairKey: tenant } : {}).enqueueMany(Array.from({ length: n }, () => ({ tenant })));
    // The process's first calls check the schema, learn whether keyed jobs exist, open the connections the loops
    // will use and prepare on them the very claims the loops send: rounds of the loops' own calls, over a few
    // jobs of a warm-up tenant, before the burst is queued. Not claim cycles to count: the measure is the claim
    // order, in claim cycles, and a first cold cycle would weigh on the p95 wait alone. (Claims of another
    // queue, as until 2026-12-05, are statements of another text: the loops' first claims then prepared and
    // planned theirs, all four at once.)
    for (let round = 0; round < WARM_UP_ROUNDS; round++) {
      await enqueue(WARM_UP, s.invocations * 4);
      await Promise.all(Array.from({ length: s.invocations }, call));
    }
    await enqueue("big", s.bigJobs);
    for (let i = 0; i < s.smallKeys; i++) await enqueue(`small-${String(i).padStart(4, "0")}`, s.smallJobsPerKey);
    // The statistics are those of a table in use.
    await query(target.db, sql`analyze akadze.jobs`);
    const queuedAt = performance.now();
    const cycles: number[] = [];
    const loop = async () => {
      for (;;) {
        claimsSent++;
        const { ms, value } = await timed(call);
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
