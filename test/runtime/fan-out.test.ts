// Fan-out (SPEC §3.6): an invocation sized to the backlog starts siblings up to `maxInvocations` live across the
// cluster, hands its slot to a successor when its budget ends with work due, and an empty queue stops at once.
// Siblings run in-process here through a plain `invoke()`, and over the Node HTTP work route with its secret.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Hono } from "hono";
import { createApp, runOnce, type App, type FanOutOptions, type RunSummary, type SiblingRequest, type Task } from "../../src/index.js";
import { akadzeRoutes, ownUrl } from "../../src/edge/hono.js";
import { serveFetch, type Served } from "../../src/dev/serve.js";
import { listWorkers } from "../../src/ops/workers.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { ManualClock } from "../support/clock.js";
import { waitFor } from "../support/wait-for.js";

let t: TestDatabase;

beforeAll(async () => { t = await openTestDatabase("fan_out"); });
afterAll(async () => { await t?.close(); });
beforeEach(async () => { await t.reset(); });

/** The most intervals open at one moment (an interval ending exactly when another starts does not overlap it). */
function mostAtOnce(intervals: { from: number; to: number }[]): number {
  const edges = intervals.flatMap((i) => [{ at: i.from, d: 1 }, { at: i.to, d: -1 }]).sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0, most = 0;
  for (const e of edges) { open += e.d; most = Math.max(most, open); }
  return most;
}

/** Per invocation, from its first job's start to its last job's end: inside the time it was live. */
class Owners {
  readonly spans = new Map<string, { from: number; to: number; jobs: number }>();
  record(owner: string, from: number, to: number): void {
    const s = this.spans.get(owner);
    if (!s) this.spans.set(owner, { from, to, jobs: 1 });
    else { s.from = Math.min(s.from, from); s.to = Math.max(s.to, to); s.jobs++; }
  }
  mostAtOnce(): number { return mostAtOnce([...this.spans.values()]); }
}

/** An app whose one task takes `ms` of I/O and records which invocation ran it, and when. */
const ioTasks = new WeakMap<App, Task>();
function ioApp(ms: number, owners: Owners): App {
  const app = createApp();
  ioTasks.set(app, app.task("fan.io", async (_args, job) => {
    const from = performance.now();
    await new Promise((resolve) => setTimeout(resolve, ms)); // the job's own work
    const [{ lease_owner }] = await t.rows("select lease_owner from akadze.all_jobs where id = $1", [job.id]);
    owners.record(lease_owner, from, performance.now());
  }));
  return app;
}

async function enqueue(app: App, n: number): Promise<void> {
  await ioTasks.get(app)!.using(t.db).enqueueMany(Array.from({ length: n }, () => ({})));
}

/** In-process fan-out: `invoke` runs the sibling's runOnce itself (and its siblings in turn), as a plain `invoke()` user would. */
function inProcess(app: App, cap: number, started: SiblingRequest[], extra: Partial<Parameters<typeof runOnce>[1]> = {}): FanOutOptions {
  const options: FanOutOptions = {
    maxInvocations: cap,
    invoke: (r) => {
      started.push(r);
      return runOnce(app, { ...extra, db: t.db, id: r.id, queues: r.queues, slots: r.slots, batchSize: r.batchSize, budget: r.budgetMs,
        fanOut: { ...options, ticket: { chain: r.chain, generation: r.generation } } });
    },
  };
  return options;
}

/** Registry intervals of every invocation that ran: from its slot being taken (or its first claim) to its stop. */
async function registryIntervals(): Promise<{ from: number; to: number }[]> {
  const rows = await t.rows<{ from: string; to: string | null }>(
    "select extract(epoch from started_at) * 1000 as from, extract(epoch from stopped_at) * 1000 as to from akadze.workers where kind = 'invocation'");
  expect(rows.every((r) => r.to !== null)).toBe(true); // every fan-out invocation records its stop
  return rows.map((r) => ({ from: Number(r.from), to: Number(r.to) }));
}

describe("fan-out", () => {
  it("4 ticks at once never hold more than maxInvocations live; every job runs once", async () => {
    const owners = new Owners();
    const app = ioApp(20, owners);
    await enqueue(app, 400);
    const started: SiblingRequest[] = [];
    const fanOut = inProcess(app, 5, started);
    const ticks = await Promise.all(Array.from({ length: 4 }, () => runOnce(app, { db: t.db, slots: 4, batchSize: 8, budget: "2m", fanOut })));

    expect(await t.rows("select state, count(*)::int as n, max(attempt) as attempts from akadze.all_jobs group by state"))
      .toEqual([{ state: "succeeded", n: 400, attempts: 1 }]);
    // A tick that came after the slots were taken (by ticks and the siblings they started) ran nothing.
    for (const s of ticks.filter((s) => s.fanOut!.slot === null)) expect(s).toMatchObject({ claimed: 0, succeeded: 0 });
    expect(owners.mostAtOnce()).toBeLessThanOrEqual(5);
    expect(mostAtOnce(await registryIntervals())).toBeLessThanOrEqual(5);
    expect(await t.rows("select count(*)::int as n from akadze.invocation_slots where holder is not null")).toEqual([{ n: 0 }]);
  });

  it("ticks beyond the cap take no slot and claim nothing; the ones holding slots do the work", async () => {
    const owners = new Owners();
    const app = ioApp(10, owners);
    await enqueue(app, 120);
    const started: SiblingRequest[] = [];
    const ticks = await Promise.all(Array.from({ length: 4 }, () => runOnce(app, { db: t.db, slots: 4, batchSize: 8, budget: "2m", fanOut: inProcess(app, 2, started) })));

    // All four asked for a slot at once and two exist: at least two were refused (a sibling may take a slot a
    // finished tick freed, never one more).
    const refused = ticks.filter((s) => s.fanOut!.slot === null);
    expect(refused.length).toBeGreaterThanOrEqual(2);
    for (const s of refused) expect(s).toMatchObject({ claimed: 0, succeeded: 0, roundTrips: 1 });
    expect(owners.mostAtOnce()).toBeLessThanOrEqual(2);
    expect(mostAtOnce(await registryIntervals())).toBeLessThanOrEqual(2);
    expect(await t.rows("select count(*)::int as n from akadze.all_jobs where state = 'succeeded'")).toEqual([{ n: 120 }]);
  });

  it("a tick sized to its backlog starts siblings that register as started by it", async () => {
    const owners = new Owners();
    const app = ioApp(20, owners);
    await enqueue(app, 200);
    const started: SiblingRequest[] = [];
    const tick = await runOnce(app, { db: t.db, slots: 4, batchSize: 8, budget: "2m", fanOut: inProcess(app, 4, started) });

    // Nothing known of the jobs' run time yet: each invocation is sized at one job per slot, so the cap is wanted.
    expect(tick.fanOut).toMatchObject({ slot: 1, generation: 0, backlog: 16, successor: null });
    expect(tick.fanOut!.started).toHaveLength(3);
    expect(started.map((r) => r.kind)).toEqual(["sibling", "sibling", "sibling"]);
    const siblings = await t.rows("select id, started_by from akadze.workers where started_by is not null order by id");
    expect(siblings.map((r) => r.id)).toEqual([...tick.fanOut!.started].sort());
    expect(siblings.every((r) => r.started_by === tick.id)).toBe(true);
    // `workers list` (and the dashboard, which reads the same rows) says who started whom.
    const listed = await listWorkers(t.db, { all: true });
    expect(listed.filter((w) => w.startedBy === tick.id).map((w) => w.id).sort()).toEqual([...tick.fanOut!.started].sort());
    expect(listed.find((w) => w.id === tick.id)).toMatchObject({ startedBy: null, status: "stopped" });
    expect(owners.mostAtOnce()).toBeLessThanOrEqual(4);
    expect(await t.rows("select count(*)::int as n from akadze.all_jobs where state = 'succeeded'")).toEqual([{ n: 200 }]);
  });

  it("an invocation whose budget ends with work due hands its slot to a successor; the chain stops when the queue is empty", async () => {
    const clock = new ManualClock(new Date(Date.now() + 1000)); // the jobs are due on it
    const app = createApp();
    // Each job takes one second of the test's clock: a 10 s budget runs about nine of them.
    const tickTask = app.task("fan.tick", async () => { clock.advance(1000); });
    await tickTask.using(t.db).enqueueMany(Array.from({ length: 25 }, () => ({})));
    const started: SiblingRequest[] = [];
    const summaries: RunSummary[] = [];
    // A starter waits for a successor only until its start deadline: the test waits for the whole chain.
    const runs: Promise<unknown>[] = [];
    const fanOut: FanOutOptions = {
      maxInvocations: 1,
      invoke: (r) => {
        started.push(r);
        const run = runOnce(app, { db: t.db, now: clock.now, id: r.id, slots: r.slots, batchSize: r.batchSize, budget: r.budgetMs,
          fanOut: { ...fanOut, ticket: { chain: r.chain, generation: r.generation } } }).then((s) => { summaries.push(s); });
        runs.push(run);
        return run;
      },
    };
    const tick = await runOnce(app, { db: t.db, now: clock.now, slots: 1, batchSize: 4, budget: "10s", fanOut });
    while (runs.length > 0) await Promise.all(runs.splice(0));

    expect(await t.rows("select count(*)::int as n from akadze.all_jobs where state = 'succeeded'")).toEqual([{ n: 25 }]);
    expect(started.map((r) => [r.kind, r.generation])).toEqual([["successor", 1], ["successor", 2]]);
    expect(started[0].startedBy).toBe(tick.id);
    expect(started[1].startedBy).toBe(started[0].id);
    expect(tick.fanOut!.successor).toBe(started[0].id);
    expect(summaries.map((s) => s.fanOut!.successor)).toEqual([null, started[1].id]);
    expect(tick.succeeded + summaries.reduce((n, s) => n + s.succeeded, 0)).toBe(25);
    // The last one found the queue empty: its slot is free and nothing else was started.
    expect(await t.rows("select holder from akadze.invocation_slots")).toEqual([{ holder: null }]);
  });

  /** A tick of a 2 s budget over jobs of one second each on `clock`, whose every sibling call goes to `invoke`; ended by the test. */
  async function tickWithCalls(clock: ManualClock, invoke: FanOutOptions["invoke"], sent: SiblingRequest[]): Promise<RunSummary> {
    const app = createApp();
    const tickTask = app.task("fan.hang", async () => { clock.advance(1000); });
    await tickTask.using(t.db).enqueueMany(Array.from({ length: 40 }, () => ({})));
    const run = runOnce(app, { db: t.db, now: clock.now, slots: 1, batchSize: 1, budget: "2s", fanOut: { maxInvocations: 4, invoke } });
    // The successor is asked for once the budget is spent; its start deadline passes on the invocation's clock.
    await waitFor(() => sent.some((r) => r.kind === "successor"), "the successor's request");
    clock.advance(10_000);
    const tick = await Promise.race([run, new Promise<"hung">((resolve) => setTimeout(() => resolve("hung"), 20_000))]);
    expect(tick).not.toBe("hung");
    expect(sent.map((r) => r.kind)).toEqual(["sibling", "sibling", "sibling", "successor"]);
    // None of them took its slot: each came back at its start deadline, the tick's own (passed on) included,
    // so the next tick, at once, takes a slot and claims.
    expect(await t.rows("select count(*)::int as n from akadze.invocation_slots where holder is not null")).toEqual([{ n: 0 }]);
    const next = await runOnce(app, { db: t.db, now: clock.now, slots: 1, batchSize: 1, budget: "2s", drain: false,
      fanOut: { maxInvocations: 4, invoke: async () => {} } });
    expect(next.fanOut!.slot).not.toBeNull();
    expect(next.claimed).toBe(1);
    return tick as RunSummary;
  }

  it("an invoke that never settles: runOnce returns, and the slots of invocations that never started are free at once", async () => {
    const clock = new ManualClock(new Date(Date.now() + 1000)); // the jobs are due on it
    const sent: SiblingRequest[] = [];
    const tick = await tickWithCalls(clock, (r) => { sent.push(r); return new Promise(() => {}); }, sent);
    expect(tick.fanOut!.started).toHaveLength(3);
  });

  it("an ownUrl request never answered is aborted at its start deadline", async () => {
    const clock = new ManualClock(new Date(Date.now() + 1000));
    const sent: SiblingRequest[] = [];
    let aborted = 0;
    const invoke = ownUrl("http://127.0.0.1:9/akadze/work", { secret: "s", fetch: (_url, init) => new Promise((_resolve, reject) => {
      init!.signal!.addEventListener("abort", () => { aborted++; reject(init!.signal!.reason); }, { once: true });
    }) });
    await tickWithCalls(clock, (r, call) => { sent.push(r); return invoke(r, call); }, sent);
    expect(aborted).toBe(4);
  });

  it("an empty queue: the tick takes its slot, claims nothing, frees the slot and starts nobody", async () => {
    const app = ioApp(1, new Owners());
    const started: SiblingRequest[] = [];
    const tick = await runOnce(app, { db: t.db, budget: "2m", fanOut: inProcess(app, 8, started) });
    expect(tick.fanOut).toMatchObject({ slot: 1, backlog: 0, started: [], successor: null });
    expect(tick.roundTrips).toBe(3); // take the slot, claim, free the slot
    expect(started).toEqual([]);
    expect(await t.rows("select holder from akadze.invocation_slots")).toEqual([{ holder: null }]);
  });

  it("an invocation stopped on purpose starts no sibling and no successor, and frees its slot", async () => {
    const app = ioApp(5, new Owners());
    await enqueue(app, 100);
    const started: SiblingRequest[] = [];
    const stop = new AbortController();
    stop.abort(); // SIGTERM before the first claim came back: it still claims, then gives everything back
    const tick = await runOnce(app, { db: t.db, slots: 4, batchSize: 8, budget: "2m", signal: stop.signal, fanOut: inProcess(app, 8, started) });
    expect(started).toEqual([]);
    expect(tick.fanOut).toMatchObject({ slot: 1, started: [], successor: null });
    expect(await t.rows("select holder from akadze.invocation_slots")).toEqual([{ holder: null }]);
    expect(await t.rows("select count(*)::int as n from akadze.all_jobs where state = 'queued'")).toEqual([{ n: 100 }]);
  });

  it("a bad maxInvocations is a clear error and changes nothing", async () => {
    const app = ioApp(1, new Owners());
    await enqueue(app, 3);
    for (const maxInvocations of [0, 1.5, 65, Number.NaN]) {
      await expect(runOnce(app, { db: t.db, fanOut: { maxInvocations, invoke: async () => {} } }))
        .rejects.toThrow(/fanOut\.maxInvocations must be a whole number from 1 to 64/);
    }
    expect(await t.rows("select count(*)::int as n from akadze.all_jobs where state = 'queued'")).toEqual([{ n: 3 }]);
    expect(await t.rows("select * from akadze.invocation_slots")).toEqual([]);
  });

  it("a ticket whose slot is not live runs nothing", async () => {
    const app = ioApp(1, new Owners());
    await enqueue(app, 5);
    const started: SiblingRequest[] = [];
    const forged = await runOnce(app, { db: t.db, id: "inv-forged.0.x", budget: "2m",
      fanOut: { ...inProcess(app, 8, started), ticket: { chain: "inv-forged", generation: 0 } } });
    expect(forged).toMatchObject({ claimed: 0, fanOut: { slot: null } });
    expect(await t.rows("select count(*)::int as n from akadze.all_jobs where state = 'queued'")).toEqual([{ n: 5 }]);
    expect(await t.rows("select * from akadze.invocation_slots")).toEqual([]);
  });
});

describe("fan-out over the Node HTTP work route", () => {
  const SECRET = "fan-out-secret";
  let served: Served | undefined;
  let invokes = 0;
  const owners = new Owners();
  const app = ioApp(20, owners);

  beforeAll(async () => {
    let base = "";
    const web = new Hono().route("/akadze", akadzeRoutes(app, {
      db: t.db, secret: SECRET, log: "silent",
      fanOut: () => ({ maxInvocations: 3, invoke: (r) => { invokes++; return ownUrl(`${base}/akadze/work`, { secret: SECRET })(r); } }),
    }));
    served = await serveFetch((request) => web.fetch(request), 0);
    base = served.url;
  });
  afterAll(async () => { await served?.close(); });
  beforeEach(() => { invokes = 0; owners.spans.clear(); });

  const post = (body: unknown, secret: string) => fetch(`${served!.url}/akadze/work`, {
    method: "POST", headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" }, body: JSON.stringify(body),
  });

  it("a wrong secret starts nothing and changes nothing", async () => {
    await enqueue(app, 50);
    const before = await t.rows("select id, state, attempt from akadze.all_jobs order by id");
    for (const body of [{}, { budget: 5000, fanOut: { id: "inv-x.0.y", chain: "inv-x", generation: 0 }, detach: true }]) {
      const res = await post(body, "not-the-secret");
      expect(res.status).toBe(401);
      expect((await res.json() as any).error.code).toBe("unauthorized");
    }
    expect(invokes).toBe(0);
    expect(await t.rows("select id, state, attempt from akadze.all_jobs order by id")).toEqual(before);
    expect(await t.rows("select * from akadze.invocation_slots")).toEqual([]);
    expect(await t.rows("select * from akadze.workers")).toEqual([]);
  });

  it("the right secret with a ticket that holds no slot is accepted but runs nothing", async () => {
    await enqueue(app, 10);
    const res = await post({ budget: 5000, fanOut: { id: "inv-x.0.y", chain: "inv-x", generation: 0 } }, SECRET);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ claimed: 0, fanOut: { slot: null } });
    expect(await t.rows("select count(*)::int as n from akadze.all_jobs where state = 'queued'")).toEqual([{ n: 10 }]);
  });

  it("a tick on the route starts its siblings through the route itself, within the cap", async () => {
    await enqueue(app, 150);
    const res = await post({ slots: 4, batchSize: 8, budget: 20_000 }, SECRET);
    expect(res.status).toBe(200);
    const tick = await res.json() as RunSummary;
    expect(tick.fanOut!.started).toHaveLength(2);
    await waitFor(async () => (await t.rows("select 1 from akadze.all_jobs where state <> 'succeeded'")).length === 0, "every job done", { timeoutMs: 30_000 });
    await waitFor(async () => (await t.rows("select 1 from akadze.invocation_slots where holder is not null")).length === 0, "every slot freed", { timeoutMs: 30_000 });
    expect(invokes).toBe(2);
    expect(owners.mostAtOnce()).toBeLessThanOrEqual(3);
    expect(await t.rows("select count(*)::int as n from akadze.workers where started_by = $1", [tick.id])).toEqual([{ n: 2 }]);
  });
});
