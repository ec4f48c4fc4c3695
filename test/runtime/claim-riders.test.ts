// What rides on a claim (src/runtime/riders.ts), one rider at a time on the core claim: each does its part in the
// claim's one statement, reports what it promises, and handles the answer itself; without it the core does none of it.
import { expect, it } from "vitest";
import * as v from "valibot";
import { createApp, runOnce, type App } from "../../src/index.js";
import { sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { query, queryJson, type Db } from "../../src/db/query.js";
import { claimCore, claimJobsStatement, type ClaimParams } from "../../src/sql/claim/claim.js";
import { claimResultOf, type ClaimAnswer } from "../../src/sql/claim/claim-answer.js";
import { timestamp } from "../../src/sql/time.js";
import { resolveRetention } from "../../src/core/retention.js";
import { HistoryKeeper } from "../../src/runtime/history.js";
import { backlogRider, claimRiders, RECOVERY_EVERY_MS, recoveryRider, registryRider, retentionRider, schedulesRider, Upkeep, type ClaimRider, type Ride } from "../../src/runtime/riders.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";

const LEASE_MS = 30_000;

/**
 * One claim of the core with `riders`, as the claimer sends it, each ride then told the answer; the statements they
 * sent are counted. `drains`: as a draining engine's claim (default: an engine of one claim's).
 */
async function claimWith(db: Db, riders: ClaimRider[], o: { now: Date; tasks: string[]; owner?: string; batchSize?: number; first?: boolean; drains?: boolean }) {
  const params: ClaimParams = {
    owner: o.owner ?? "test#riders", now: timestamp(o.now), leaseMs: LEASE_MS, batchSize: o.batchSize ?? 10, startCount: o.batchSize ?? 10,
    tasks: o.tasks, queues: null, limits: false,
  };
  const core = claimCore(params);
  const rides = riders.map((rider) => rider.ride({ first: o.first ?? true, batchSize: params.batchSize, drains: o.drains ?? false, core })).filter((r): r is Ride => r !== null);
  const answer = claimResultOf(await queryJson<ClaimAnswer>(db, claimJobsStatement(params, rides)));
  let statements = 0;
  let more = false;
  for (const ride of rides) if (ride.answered?.(answer, () => { statements++; }) === true) more = true;
  await Promise.all(riders.map((rider) => rider.finished?.()));
  return { answer, rides: rides.length, statements, more };
}

function appWithNoop(clock: ManualClock): { app: App } {
  const app = createApp({ clock: clock.now });
  app.task("riders.noop", { args: v.object({}) }, async () => {});
  return { app };
}

forEachDriver((h) => {
  const tasks = ["riders.noop"];
  const enqueue = async (app: App, n: number) => app.taskByName("riders.noop").using(h().db).enqueueMany(Array.from({ length: n }, () => ({})));

  it("the list: an engine's riders in their declared order, the optional ones only when given", () => {
    const app = createApp();
    const plan = resolveRetention(undefined)!;
    const bare = claimRiders({ app, db: h().db, now: () => new Date() });
    expect(bare.map((r) => r.name)).toEqual(["recovery", "schedules", "upkeep"]);
    const all = claimRiders({
      app, db: h().db, now: () => new Date(), retention: { plan, due: () => true },
      history: new HistoryKeeper({ app, db: h().db, plan, sqlNow: () => timestamp(null), callerClock: true }),
      registry: { id: "inv", queues: null, startedAt: new Date() }, backlog: () => 16,
    });
    expect(all.map((r) => r.name)).toEqual(["recovery", "schedules", "retention", "history", "registry", "backlog", "upkeep"]);
  });

  it("the core alone claims and leases due jobs and leaves another engine's expired lease; the recovery rider takes it back", async () => {
    const clock = new ManualClock();
    const { app } = appWithNoop(clock);
    const [first, second] = await enqueue(app, 2);
    const taken = await claimWith(h().db, [], { now: clock.now(), tasks, owner: "gone#1", batchSize: 1 });
    expect(taken.answer.claimed.map((j) => j.id)).toEqual([first]);
    clock.advance(LEASE_MS + 1000);
    const core = await claimWith(h().db, [], { now: clock.now(), tasks });
    expect(core.answer.claimed.map((j) => j.id)).toEqual([second]);
    expect(core.answer.recovered).toEqual([]);
    expect((await h().rows(`select state, lease_owner from akadze.jobs where id = ${first}`))[0]).toMatchObject({ state: "running", lease_owner: "gone#1" });

    const withRecovery = await claimWith(h().db, [recoveryRider(clock.now)], { now: clock.now(), tasks });
    expect(withRecovery.answer.recovered.map((t) => [t.id, t.to])).toEqual([[first, "queued"]]);
    expect((await h().rows(`select state, lease_owner from akadze.jobs where id = ${first}`))[0]).toMatchObject({ state: "queued", lease_owner: null });
  });

  it("recovery rides on an engine's first claim, then on a later one once RECOVERY_EVERY_MS passed on the engine's clock since it last rode", async () => {
    const clock = new ManualClock();
    const { app } = appWithNoop(clock);
    const [lapsed] = await enqueue(app, 1);
    await claimWith(h().db, [], { now: clock.now(), tasks, owner: "gone#1", batchSize: 1 });
    clock.advance(LEASE_MS - 500);
    const rider = recoveryRider(clock.now);
    const first = await claimWith(h().db, [rider], { now: clock.now(), tasks, first: true });
    expect(first.rides).toBe(1);
    expect(first.answer.recovered).toEqual([]);
    // gone#1's lease lapses, but the rider rode 600 ms ago: this claim does not carry it, and the job stays leased.
    clock.advance(600);
    const later = await claimWith(h().db, [rider], { now: clock.now(), tasks, first: false });
    expect(later.rides).toBe(0);
    expect((await h().rows(`select state, lease_owner from akadze.jobs where id = ${lapsed}`))[0]).toMatchObject({ state: "running", lease_owner: "gone#1" });
    clock.advance(RECOVERY_EVERY_MS - 600);
    const due = await claimWith(h().db, [rider], { now: clock.now(), tasks, first: false });
    expect(due.rides).toBe(1);
    expect(due.answer.recovered.map((t) => [t.id, t.to])).toEqual([[lapsed, "queued"]]);
  });

  it("a claim that answers a wake-up leaves a due recovery to the next claim, unless it is twice RECOVERY_EVERY_MS late", async () => {
    const clock = new ManualClock();
    const { app } = appWithNoop(clock);
    const [lapsed] = await enqueue(app, 1);
    await claimWith(h().db, [], { now: clock.now(), tasks, owner: "gone#1", batchSize: 1 });
    let woken = false;
    const rider = recoveryRider(clock.now, () => { const w = woken; woken = false; return w; });
    clock.advance(LEASE_MS - 500);
    woken = true; // an engine's first claim recovers, woken or not
    expect((await claimWith(h().db, [rider], { now: clock.now(), tasks, first: true })).rides).toBe(1);
    // gone#1's lease lapses; 1.5 s after recovery last rode, a wake-up's claim takes the job it was woken for without it.
    clock.advance(1500);
    const [waitedFor] = await enqueue(app, 1);
    woken = true;
    const wake = await claimWith(h().db, [rider], { now: clock.now(), tasks, batchSize: 1, first: false });
    expect(wake.rides).toBe(0);
    expect(wake.answer.claimed.map((j) => j.id)).toEqual([waitedFor]);
    expect((await h().rows(`select state, lease_owner from akadze.jobs where id = ${lapsed}`))[0]).toMatchObject({ state: "running", lease_owner: "gone#1" });
    // The next claim, not woken, carries it.
    const next = await claimWith(h().db, [rider], { now: clock.now(), tasks, first: false });
    expect(next.answer.recovered.map((t) => [t.id, t.to])).toEqual([[lapsed, "queued"]]);
    // Twice RECOVERY_EVERY_MS after it last rode, a wake-up's claim carries it all the same.
    clock.advance(2 * RECOVERY_EVERY_MS);
    woken = true;
    expect((await claimWith(h().db, [rider], { now: clock.now(), tasks, first: false })).rides).toBe(1);
  });

  it("on a draining engine recovery rides as its probe: nothing lapsed, it says so; another engine's lapsed lease, it asks for the next claim at once, which recovers it", async () => {
    const clock = new ManualClock();
    const { app } = appWithNoop(clock);
    const [lapsed] = await enqueue(app, 1);
    await claimWith(h().db, [], { now: clock.now(), tasks, owner: "gone#1", batchSize: 1 });
    const rider = recoveryRider(clock.now);
    const quiet = await claimWith(h().db, [rider], { now: clock.now(), tasks, drains: true });
    expect(quiet).toMatchObject({ rides: 1, more: false, answer: { recoverable: false, recovered: [] } });
    clock.advance(LEASE_MS + 1000);
    const probed = await claimWith(h().db, [rider], { now: clock.now(), tasks, drains: true, first: false });
    expect(probed).toMatchObject({ rides: 1, more: true, answer: { recoverable: true, recovered: [] } });
    expect((await h().rows(`select state, lease_owner from akadze.jobs where id = ${lapsed}`))[0]).toMatchObject({ state: "running", lease_owner: "gone#1" });
    // The claim right after carries the recovery itself, RECOVERY_EVERY_MS or not.
    const next = await claimWith(h().db, [rider], { now: clock.now(), tasks, drains: true, first: false });
    expect(next.answer.recovered.map((t) => [t.id, t.to])).toEqual([[lapsed, "queued"]]);
    expect(next.answer.recoverable).toBeUndefined();
  });

  it("recovery's probe finds running jobs whose owner has no row, and no work in the rows of owners that ended or in an older version's live lease; the retention rider deletes ended owners' rows", async () => {
    const clock = new ManualClock();
    const { app } = appWithNoop(clock);
    const [orphaned] = await enqueue(app, 1);
    await claimWith(h().db, [], { now: clock.now(), tasks, owner: "late#1", batchSize: 1 });
    await claimWith(h().db, [], { now: clock.now(), tasks, owner: "ended#1", batchSize: 1 });
    clock.advance(LEASE_MS + 1000);
    // ended#1 leased nothing and its row lapsed: nothing to recover. Nor is a job of a version before the owners
    // table (no row, an expiry of its own) while that expiry lives.
    await query(h().db, sql`update akadze.owners set expires_at = ${clock.now().toISOString()}::timestamptz + interval '1 hour' where owner = 'late#1'`);
    await query(h().db, sql`insert into akadze.jobs (task, state, attempt, lease_owner, lease_expires_at, started_at)
      values ('riders.noop', 'running', 1, 'older-engine', ${new Date(clock.now().getTime() + LEASE_MS).toISOString()}::timestamptz, ${clock.now().toISOString()}::timestamptz)`);
    expect((await claimWith(h().db, [recoveryRider(clock.now)], { now: clock.now(), tasks, drains: true })).answer.recoverable).toBe(false);
    await query(h().db, sql`delete from akadze.jobs where lease_owner = 'older-engine'`);
    // late#1's row went while its job runs (a delete under its late claim): the probe finds the job.
    await query(h().db, sql`delete from akadze.owners where owner = 'late#1'`);
    const probed = await claimWith(h().db, [recoveryRider(clock.now)], { now: clock.now(), tasks, drains: true });
    expect(probed).toMatchObject({ more: true, answer: { recoverable: true } });
    expect((await h().rows(`select state from akadze.jobs where id = ${orphaned}`))[0]).toMatchObject({ state: "running" });
    // Retention deletes ended#1's lapsed row, not the live ones (the claim's own among them).
    const owners = async () => (await h().rows<{ owner: string }>(`select owner from akadze.owners order by owner`)).map((r) => r.owner);
    expect(await owners()).toContain("ended#1");
    await claimWith(h().db, [retentionRider({ plan: resolveRetention(undefined)!, due: () => true }, clock.now)], { now: clock.now(), tasks });
    expect(await owners()).toEqual(["test#riders"]);
  });

  it("schedules: a due slot is enqueued by the claim that carries the rider, once, and not by the core alone", async () => {
    const clock = new ManualClock("2026-06-01T12:00:30Z");
    const app = createApp({ clock: clock.now });
    app.periodic("riders.minutely", { every: "1m" }, async () => {});
    const count = async () => Number((await h().rows(`select count(*)::int as n from akadze.all_jobs where task = 'riders.minutely'`))[0].n);
    await claimWith(h().db, [], { now: clock.now(), tasks: ["riders.minutely"] });
    expect(await count()).toBe(0);
    const rider = schedulesRider(app, clock.now);
    const fired = await claimWith(h().db, [rider], { now: clock.now(), tasks: ["riders.minutely"] });
    expect(fired.answer.scheduled).toBe(1);
    expect(fired.answer.claimed).toEqual([]); // enqueued in the claim's own statement: outside its snapshot
    expect(await count()).toBe(1);
    expect((await claimWith(h().db, [], { now: clock.now(), tasks: ["riders.minutely"] })).answer.claimed).toHaveLength(1);
    // Another process's rider, at the same instant, finds the slot taken.
    await claimWith(h().db, [schedulesRider(app, clock.now)], { now: clock.now(), tasks: ["riders.minutely"] });
    expect(await count()).toBe(1);
  });

  it("retention: rows past their horizon are pruned by a claim it rides on, kept when it does not ride", async () => {
    const clock = new ManualClock();
    const plan = resolveRetention(undefined)!;
    const old = new Date(clock.now().getTime() - plan.workersMs - 60_000).toISOString();
    await query(h().db, sql`insert into akadze.workers (id, kind, queues, started_at, last_seen_at) values ('old-inv', 'invocation', '[]', ${old}::timestamptz, ${old}::timestamptz)`);
    const workers = async () => (await h().rows(`select id from akadze.workers`)).map((r) => r.id);
    const rider = retentionRider({ plan, due: (first) => !first }, clock.now);
    expect((await claimWith(h().db, [rider], { now: clock.now(), tasks, first: true })).rides).toBe(0);
    expect(await workers()).toEqual(["old-inv"]);
    await claimWith(h().db, [rider], { now: clock.now(), tasks, first: false });
    expect(await workers()).toEqual([]);
  });

  it("history: the rider asks whether the history has work and runs one maintenance statement when it has", async () => {
    const clock = new ManualClock();
    const { app } = appWithNoop(clock);
    const plan = resolveRetention(undefined)!;
    const keeper = () => new HistoryKeeper({ app, db: h().db, plan, sqlNow: () => timestamp(clock.now()), callerClock: true });
    // A finished job in the history, then the clock past its retention: the history has work.
    await enqueue(app, 1);
    expect(await runOnce(app, { db: h().db, now: clock.now, retention: false })).toMatchObject({ succeeded: 1 });
    expect(await claimWith(h().db, [keeper()], { now: clock.now(), tasks })).toMatchObject({ answer: { historyDue: false }, statements: 0 });
    clock.advance(plan.finishedMs + 86_400_000);
    const due = await claimWith(h().db, [keeper()], { now: clock.now(), tasks });
    expect(due.answer.historyDue).toBe(true);
    expect(due.statements).toBe(1);
    const after = await claimWith(h().db, [keeper()], { now: clock.now(), tasks });
    expect(after.answer.historyDue).toBe(false);
    expect(after.statements).toBe(0);
  });

  it("registry: the invocation's row is written by the claim that takes a job, not by one that takes none, and the rider then stops riding", async () => {
    const clock = new ManualClock();
    const { app } = appWithNoop(clock);
    const rider = registryRider({ id: "inv-riders", queues: null, startedAt: clock.now() }, clock.now);
    const rows = async () => (await h().rows(`select id, kind from akadze.workers`));
    expect((await claimWith(h().db, [rider], { now: clock.now(), tasks })).answer.claimed).toEqual([]);
    expect(await rows()).toEqual([]);
    await enqueue(app, 1);
    expect((await claimWith(h().db, [rider], { now: clock.now(), tasks })).answer.claimed).toHaveLength(1);
    expect(await rows()).toEqual([{ id: "inv-riders", kind: "invocation" }]);
    expect((await claimWith(h().db, [rider], { now: clock.now(), tasks })).rides).toBe(0);
  });

  it("backlog: the due claimable jobs are counted with the batch just taken, up to the bound; only when the rider rides", async () => {
    const clock = new ManualClock();
    const { app } = appWithNoop(clock);
    await enqueue(app, 30);
    const plain = await claimWith(h().db, [], { now: clock.now(), tasks, batchSize: 10 });
    expect(plain.answer.backlog).toBeUndefined();
    const counted = await claimWith(h().db, [backlogRider(() => 100)], { now: clock.now(), tasks, batchSize: 10 });
    expect(counted.answer.claimed).toHaveLength(10);
    expect(counted.answer.backlog).toBe(20);
    const bounded = await claimWith(h().db, [backlogRider(() => 4)], { now: clock.now(), tasks, batchSize: 2 });
    expect(bounded.answer.backlog).toBe(4);
    expect((await claimWith(h().db, [backlogRider(() => undefined)], { now: clock.now(), tasks })).rides).toBe(0);
  });

  it("upkeep: a claim reports whether the statistics are stale and the table needs a vacuum, and the rider sends the statement only when told so", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const upkeep = new Upkeep(app, h().db);
    const quiet = await claimWith(h().db, [upkeep], { now: clock.now(), tasks });
    expect(quiet.answer).toMatchObject({ stale: false, vacuum: false });
    expect(quiet.statements).toBe(0);
    // The vacuum question is asked at most every few seconds per process, the statistics one with every claim;
    // asked or not, the claim's text is the same (a parameter says which), so it stays one prepared statement.
    const context = { first: false, batchSize: 10, drains: false, core: claimCore({ owner: "o", now: timestamp(clock.now()), leaseMs: LEASE_MS, batchSize: 10, startCount: 0, tasks, queues: null, limits: false }) };
    const again = upkeep.ride(context);
    const elsewhere = new Upkeep(createApp({ clock: clock.now }), h().db).ride(context);
    expect(Object.keys(again.report ?? {})).toEqual(["stale", "vacuum"]);
    const vacuumQuestion = (ride: Ride) => new PgDialect().sqlToQuery(ride.report!.vacuum);
    expect(vacuumQuestion(again).params).toEqual([false]);
    expect(vacuumQuestion(elsewhere).params).toEqual([true]);
    expect(vacuumQuestion(again).sql).toBe(vacuumQuestion(elsewhere).sql);
    let sent = 0;
    again.answered?.({ ...quiet.answer, stale: false, vacuum: true }, () => { sent++; });
    await upkeep.finished();
    expect(sent).toBe(1);
  });
});
