// The benchmark's own instruments: what they count is what the scale-out and claim-cost tables divide by.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import { createApp, runOnce } from "../../src/index.js";
import { query } from "../../src/db/query.js";
import { openAkadze, type AkadzeTarget } from "../../bench/akadze-db.js";
import { cpuSpentMs, snapshotCpu } from "../../bench/pg-cpu.js";
import { best, type SweepEntry } from "../../bench/sweep.js";
import { medianRow } from "../../bench/stats.js";

describe("the bench's Postgres instruments (node-postgres)", () => {
  let target: AkadzeTarget;
  beforeAll(async () => { target = await openAkadze("node-postgres", "harness", { poolSize: 1 }); });
  afterAll(async () => { await target?.close(); });

  it("counts an idle runOnce as one claim and sees every statement it reports", async () => {
    const app = createApp();
    app.task("bench.noop", async () => {});
    target.counter!.reset();
    const summary = await runOnce(app, { db: target.db });
    expect(target.counter!.claims).toBe(1);
    expect(target.counter!.statements).toBe(summary.roundTrips);
    expect(target.counter!.firstClaim?.text).toMatch(/skip\s+locked/i);
  });

  it("reads the CPU the database's backends spent from /proc", async () => {
    await query(target.db, sql`select 1`); // the pool's one connection exists before the first snapshot
    const before = await snapshotCpu(target.database!);
    await query(target.db, sql`select count(*) from generate_series(1, 3000000)`);
    const spent = cpuSpentMs(before, await snapshotCpu(target.database!));
    expect(spent).not.toBeNull();
    expect(spent!).toBeGreaterThan(0);
  });
});

describe("a sweep's pick", () => {
  const entry = (settings: string, processPerSec: number, concurrency: number, error?: string): SweepEntry<{ concurrency: number }> =>
    ({ system: "s", settings, config: { concurrency }, jobs: 1, processPerSec, ...(error ? { error } : {}) });

  it("is the fastest configuration that ran, within the eligible ones", () => {
    const entries = [entry("a", 100, 10), entry("b", 300, 20), entry("c", NaN, 10, "too many clients"), entry("d", 200, 10)];
    expect(best(entries).settings).toBe("b");
    expect(best(entries, (c) => c.concurrency === 10).settings).toBe("d");
  });

  it("is a clear error when no configuration ran", () => {
    expect(() => best([entry("c", NaN, 10, "boom")])).toThrow(/no eligible configuration/);
  });
});

describe("a median row of repeated measurements", () => {
  it("takes each number field's median across the rows and every other field from the first", () => {
    const rows = [{ mode: "fair", wait: 3, cycles: 1.5 }, { mode: "fair", wait: 1, cycles: 4 }, { mode: "fair", wait: 2, cycles: 2 }];
    expect(medianRow(rows)).toEqual({ mode: "fair", wait: 2, cycles: 2 });
  });
});
