// Fan-out in real workerd (miniflare; the Worker bundled by wrangler, bound to itself as SELF) over neon-http: one cron
// tick over 2,000 jobs of 100 ms (6 slots, a 6 s budget, maxInvocations 8) fans out and its chain drains every job the
// limits let through with no second tick, never more than 8 invocations live, the limits held on the handlers' starts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setLimit } from "../../src/index.js";
import { FAN_OUT, sleepy } from "../fixtures/fan-out-worker.js";
import { createTestDatabase } from "../support/postgres.js";
import { bundleWithWrangler, startWorkerd, type WorkerdHarness } from "../support/workerd.js";
import { busiestWindow } from "../support/busiest-window.js";
import { waitFor } from "../support/wait-for.js";

// How many budgets the drain takes is a speed: alone here it is two (one invocation alone would need about six),
// beside another suite on 2 cores three or four; bench/fan-out.ts measures the drain per minute.

const NAME = "akadze-fan-out";
const JOBS = 2000;
/** Of them, this many under a `maxStarts` limit, and under a `maxRunning` one. */
// (Sized to end inside the first wave: jobs a limit holds back when the chain ends wait for the next tick,
// as they would without fan-out; docs/deploying.md.)
const STARTS_LIMITED = 60;
const MAX_STARTS = 30;
const RUNNING_LIMITED = 30;
const MAX_RUNNING = 5;

let outdir: string;
let harness: WorkerdHarness | undefined;

beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), "akadze-fan-out-worker-"));
  const config = join(outdir, "wrangler.toml");
  await writeFile(config, [
    `name = "${NAME}"`, `main = ${JSON.stringify(resolve("test/fixtures/fan-out-worker.ts"))}`,
    `compatibility_date = "2026-04-01"`, `compatibility_flags = ["nodejs_compat"]`,
    // The Worker bound to itself, as docs/deploying.md tells a user to do.
    `[[services]]`, `binding = "SELF"`, `service = "${NAME}"`, "",
  ].join("\n"));
  const [, database] = await Promise.all([bundleWithWrangler(join(outdir, "out"), config), createTestDatabase("fan_out_workerd")]);
  harness = await startWorkerd({
    scriptPath: join(outdir, "out", "fan-out-worker.js"), modulesRoot: join(outdir, "out"), database, secret: "fan-out-workerd",
    name: NAME, serviceBindings: { SELF: NAME },
    setup: async (db) => {
      await setLimit(db, "starts", { maxStarts: MAX_STARTS, window: "1s" });
      await setLimit(db, "running", { maxRunning: MAX_RUNNING });
      // The limited jobs first, so they are due from the start and the limits pace them across all siblings.
      await sleepy.using(db, { limitKey: "starts" }).enqueueMany(Array.from({ length: STARTS_LIMITED }, () => ({})));
      await sleepy.using(db, { limitKey: "running" }).enqueueMany(Array.from({ length: RUNNING_LIMITED }, () => ({})));
      const plain = Array.from({ length: JOBS - STARTS_LIMITED - RUNNING_LIMITED }, () => ({}));
      for (let i = 0; i < plain.length; i += 1000) await sleepy.using(db).enqueueMany(plain.slice(i, i + 1000));
    },
  });
}, 180_000);

afterAll(async () => {
  await harness?.close();
  if (outdir) await rm(outdir, { recursive: true, force: true });
});

/** The budget an invocation belongs to: fan-out names its invocations `<tick>.<generation>.<random>`; the tick is 0. */
const generationOf = (id: string) => (id.includes(".") ? Number(id.split(".")[1]) : 0);

function mostAtOnce(intervals: { from: number; to: number }[]): number {
  const edges = intervals.flatMap((i) => [{ at: i.from, d: 1 }, { at: i.to, d: -1 }]).sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0, most = 0;
  for (const e of edges) { open += e.d; most = Math.max(most, open); }
  return most;
}

describe("fan-out in workerd, the Worker bound to itself", () => {
  it("one cron tick's chain drains 2,000 jobs of 100 ms, never more than 8 invocations live, limits held", async () => {
    const { mf, pool } = harness!;
    const rows = async (text: string) => (await pool.query(text)).rows;
    // miniflare types its Fetcher against @cloudflare/workers-types, which this project does not install.
    const worker = await mf.getWorker() as unknown as { scheduled(options: { cron: string }): Promise<{ outcome: string }> };
    const left = () => rows("select state, limit_key, count(*)::int as n from akadze.all_jobs where state in ('queued', 'running') group by 1, 2");
    const liveSlots = () => rows("select slot, holder, expires_at from akadze.invocation_slots where holder is not null");
    // Successors run in their starters' waitUntil, after the tick's own promise may have settled. The chain ends
    // when the work is done, or when only jobs a limit holds back are left: those wait for the next tick (on a
    // loaded machine the first wave may not have got through the limit's room), which the loop then sends.
    let before = Infinity;
    for (let tick = 1; ; tick++) {
      expect((await worker.scheduled({ cron: "* * * * *" })).outcome).toBe("ok");
      await waitFor(async () => (await left()).length === 0 || (await liveSlots()).length === 0,
        "every job to finish, or the chain to end", { timeoutMs: 120_000, intervalMs: 250 }).catch(async (error: Error) => {
        throw new Error(`${error.message}; left: ${JSON.stringify(await left())}; live slots: ${JSON.stringify(await liveSlots())}`);
      });
      await waitFor(async () => (await liveSlots()).length === 0, "every slot to be freed", { timeoutMs: 60_000, intervalMs: 250 });
      const remaining = await left();
      if (remaining.length === 0) break;
      // Only limited jobs may be left for a later tick, and each tick gets some of them through (how many a tick
      // gets through depends on the machine's load: a progress check, not a speed claim; the cap only ends a loop).
      expect(remaining.filter((r) => r.limit_key === null)).toEqual([]);
      const count = remaining.reduce((n, r) => n + Number(r.n), 0);
      // (A tick on a loaded machine may get none through; the tick cap below bounds the loop, so every limited
      // job must still end within it.)
      expect(count).toBeLessThanOrEqual(before);
      before = count;
      expect(tick).toBeLessThan(50);
    }

    const jobs = await rows("select state, attempt, limit_key, result from akadze.all_jobs") as
      { state: string; attempt: number; limit_key: string | null; result: { at: number; end: number; invocation: string } }[];
    expect(jobs).toHaveLength(JOBS);
    expect(jobs.filter((j) => j.state !== "succeeded" || j.attempt !== 1)).toEqual([]);

    // The budgets the chain took: the tick's wave is generation 0, their successors 1, and so on.
    const generations = new Map<number, Set<string>>();
    for (const j of jobs) {
      const g = generationOf(j.result.invocation);
      if (!generations.has(g)) generations.set(g, new Set());
      generations.get(g)!.add(j.result.invocation);
    }
    const deepest = Math.max(...generations.keys());
    console.log(`fan-out in workerd: ${JOBS} jobs in ${deepest + 1} budgets, invocations per budget ${[...generations.keys()].sort().map((g) => generations.get(g)!.size).join(", ")}`);
    // The tick did fan out: its wave held more than one invocation.
    expect(generations.get(0)!.size).toBeGreaterThan(1);

    // Never more than 8 live: neither by the registry (slot taken .. stop, on the database's clock) nor by the
    // handlers (each invocation's first start .. last end, on workerd's clock).
    const registry = await rows("select extract(epoch from started_at) * 1000 as f, extract(epoch from stopped_at) * 1000 as t from akadze.workers where kind = 'invocation'");
    expect(registry.every((r) => r.t !== null)).toBe(true);
    expect(mostAtOnce(registry.map((r) => ({ from: Number(r.f), to: Number(r.t) })))).toBeLessThanOrEqual(FAN_OUT.maxInvocations);
    const spans = new Map<string, { from: number; to: number }>();
    for (const { result: r } of jobs) {
      const s = spans.get(r.invocation);
      spans.set(r.invocation, s ? { from: Math.min(s.from, r.at), to: Math.max(s.to, r.end) } : { from: r.at, to: r.end });
    }
    expect(mostAtOnce([...spans.values()])).toBeLessThanOrEqual(FAN_OUT.maxInvocations);
    expect((await rows("select max(slot) as top from akadze.invocation_slots"))[0].top).toBeLessThanOrEqual(FAN_OUT.maxInvocations);

    // Limits across all siblings, on the handlers' own start times.
    const startsOf = (key: string) => jobs.filter((j) => j.limit_key === key).map((j) => j.result.at);
    expect(busiestWindow(startsOf("starts"), 1000)).toBeLessThanOrEqual(MAX_STARTS);
    expect(mostAtOnce(jobs.filter((j) => j.limit_key === "running").map((j) => ({ from: j.result.at, to: j.result.end })))).toBeLessThanOrEqual(MAX_RUNNING);
  }, 240_000);
});
