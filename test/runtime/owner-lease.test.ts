// A lease per engine (issue 38, item 2): a running job's lease is its owner's row in akadze.owners, which every
// claim and heartbeat of that engine renews. A heartbeat writes that one row, not the jobs; the jobs of an owner
// whose row expired are recovered by another engine; during a deploy, jobs leased by an older version (an
// expiry of their own) are recovered as before, and the older version's recovery never takes a newer engine's.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import * as v from "valibot";
import { drizzle } from "drizzle-orm/node-postgres";
import { createApp, runOnce, type Db } from "../../src/index.js";
import { queryJson } from "../../src/db/query.js";
import { claimJobsStatement } from "../../src/sql/claim/claim.js";
import { type ClaimAnswer } from "../../src/sql/claim/claim-answer.js";
import { heartbeatStatement, type BeatAnswer } from "../../src/sql/claim/heartbeat.js";
import { timestamp } from "../../src/sql/time.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { deferred } from "../support/deferred.js";
import { BeatPool } from "../support/beat-pool.js";
import { waitFor } from "../support/wait-for.js";

const LEASE_MS = 30_000;

/**
 * The recovery of the version before the owners table, as it reads the jobs (its condition and lock): what an
 * engine not yet upgraded sends while a deploy rolls out.
 */
const OLDER_RECOVERY = `select id from akadze.jobs where state = 'running' and lease_expires_at < $1 and lease_owner <> $2
  order by lease_expires_at limit 500 for update skip locked`;

forEachDriver((h) => {
  const claimAs = (owner: string, clock: ManualClock, tasks: string[]) => queryJson<ClaimAnswer>(h().db, claimJobsStatement({
    owner, now: timestamp(clock.now()), leaseMs: LEASE_MS, batchSize: 10, startCount: 10, tasks, queues: null, limits: false,
  }));
  const ownerRow = async (owner: string) => (await h().rows<{ expires_at: string }>(`select expires_at from akadze.owners where owner = '${owner}'`))[0];

  it("a claim leases its jobs through one owner row; a heartbeat renews that row and leaves the jobs' rows unwritten", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const task = app.task("t", async () => {});
    await task.using(h().db).enqueueMany([{}, {}, {}]);
    const claimed = (await claimAs("engine-a", clock, ["t"])).claimed.map((row) => Number(row[0]));
    expect(claimed).toHaveLength(3);
    expect(new Date((await ownerRow("engine-a")).expires_at).getTime()).toBe(clock.now().getTime() + LEASE_MS);
    const versions = async () => await h().rows(`select id, xmin::text as v, lease_expires_at from akadze.jobs order by id`);
    const before = await versions();
    expect(before.every((row) => row.lease_expires_at === null)).toBe(true);

    clock.advance(10_000);
    const answer = await queryJson<BeatAnswer>(h().db, heartbeatStatement("engine-a", timestamp(clock.now()), LEASE_MS, claimed.slice(0, 2)));
    expect(answer.held.map((j) => Number(j.id)).sort()).toEqual(claimed.slice(0, 2).sort());
    expect(Number(answer.unnamed)).toBe(1); // the third job, leased to it but not named
    expect(new Date((await ownerRow("engine-a")).expires_at).getTime()).toBe(clock.now().getTime() + LEASE_MS);
    expect(await versions()).toEqual(before);
  });

  it("the jobs of an owner whose row expired are recovered by another engine, and the row goes once it leases nothing", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let runs = 0;
    const id = await app.task("t", async () => { runs++; }).using(h().db).enqueue({});
    await claimAs("vanished", clock, ["t"]);
    clock.advance(LEASE_MS - 1000);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ claimed: 0, recovered: 0 });
    expect(await ownerRow("vanished")).toBeDefined();
    clock.advance(2000);
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ recovered: 1 });
    expect(await ownerRow("vanished")).toBeUndefined();
    clock.advance(1000);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(runs).toBe(1);
    expect((await h().rows(`select state from akadze.all_jobs where id = ${id}`))[0]).toEqual({ state: "succeeded" });
  });

  it("the jobs of an owner that has no row (deleted while they ran) are recovered as a lapsed owner's; a live owner's are not", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let runs = 0;
    const [gone, live] = await app.task("t", async () => { runs++; }).using(h().db).enqueueMany([{}, {}]);
    expect((await claimAs("rowless", clock, ["t"])).claimed).toHaveLength(2);
    // The live owner keeps one of them, under a row of its own.
    await h().db.execute(sql.raw(`update akadze.jobs set lease_owner = 'live' where id = ${live}`));
    await queryJson(h().db, heartbeatStatement("live", timestamp(clock.now()), LEASE_MS, [Number(live)]));
    await h().db.execute(sql.raw(`delete from akadze.owners where owner = 'rowless'`));
    clock.advance(1000);
    expect(await runOnce(app, { db: h().db, now: clock.now, queues: ["none"] })).toMatchObject({ recovered: 1 });
    expect(await h().rows(`select id::text as id, state, lease_owner, attempt from akadze.jobs order by id`)).toEqual([
      { id: String(gone), state: "queued", lease_owner: null, attempt: 1 },
      { id: String(live), state: "running", lease_owner: "live", attempt: 1 },
    ]);
    // (Started by its claim, so its attempt is spent, and it waits out the default backoff.)
    clock.advance(5000);
    await runOnce(app, { db: h().db, now: clock.now });
    expect(runs).toBe(1);
  });

  /** `ended` rows of engines that ended holding nothing, and a job leased by an engine that vanished, its lease lapsed. */
  async function deadEngineBeside(ended: number) {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const id = await app.task("t", async () => {}).using(h().db).enqueue({});
    const lapsed = new Date(clock.now().getTime() - 1000).toISOString();
    await h().db.execute(sql.raw(`insert into akadze.owners (owner, expires_at) select 'ended-' || n, '${lapsed}' from generate_series(1, ${ended}) n`));
    await claimAs("vanished", clock, ["t"]);
    clock.advance(LEASE_MS + 1);
    return { clock, app, id };
  }

  it("owner rows of engines that ended holding nothing, however many, never delay the recovery of one that died holding jobs", async () => {
    const { clock, app, id } = await deadEngineBeside(300);
    expect(await runOnce(app, { db: h().db, now: clock.now, queues: ["none"], retention: { batch: 100 } })).toMatchObject({ recovered: 1 });
    expect((await h().rows(`select state from akadze.jobs where id = ${id}`))[0]).toEqual({ state: "queued" });
    // The ended rows go a bounded number an invocation (retention's batch, and the recovery's when it rides), oldest first.
    const left = Number((await h().rows<{ n: string }>("select count(*) as n from akadze.owners where owner like 'ended-%'"))[0].n);
    expect(left).toBeLessThan(300);
    expect(left).toBeGreaterThan(0);
  });

  it("an invocation of one claim recovers a dead engine's jobs and prunes ended owners' rows in that claim, both deleting lapsed rows", async () => {
    const { clock, app, id } = await deadEngineBeside(20);
    // (A caller's clock: retention rides on the claim, beside the recovery.)
    expect(await runOnce(app, { db: h().db, now: clock.now, queues: ["none"], drain: false })).toMatchObject({ recovered: 1 });
    expect((await h().rows(`select state from akadze.jobs where id = ${id}`))[0]).toEqual({ state: "queued" });
    expect(await h().rows("select owner from akadze.owners where owner like 'ended-%' or owner = 'vanished'")).toEqual([]);
  });

  it("during a deploy: an older engine's job (an expiry of its own) is recovered once that expiry passes, and the older recovery never takes a newer engine's job", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    app.task("t", async () => {});
    const at = (ms: number) => new Date(clock.now().getTime() + ms).toISOString();
    await h().db.execute(sql.raw(`insert into akadze.jobs (task, state, attempt, lease_owner, lease_expires_at, started_at)
      values ('t', 'running', 1, 'older-engine', '${at(LEASE_MS)}', '${at(0)}')`));
    const [older] = await h().rows<{ id: string }>("select id from akadze.jobs where lease_owner = 'older-engine'");
    await app.task("u", async () => {}).using(h().db).enqueue({});
    await claimAs("newer-engine", clock, ["u"]);

    clock.advance(LEASE_MS - 1000);
    // The older engine's heartbeat renews its job's own expiry, as it always did; the newer one's, its owner row.
    await h().db.execute(sql.raw(`update akadze.jobs set lease_expires_at = '${at(LEASE_MS)}' where lease_owner = 'older-engine'`));
    await queryJson(h().db, heartbeatStatement("newer-engine", timestamp(clock.now()), LEASE_MS, []));
    clock.advance(2000);
    expect(await runOnce(app, { db: h().db, now: clock.now, queues: ["none"] })).toMatchObject({ recovered: 0 });

    clock.advance(LEASE_MS);
    // Both leases have lapsed now. The older version's recovery sees only the older engine's job.
    const seen = await h().rows<{ id: string }>(OLDER_RECOVERY.replace("$1", `'${clock.now().toISOString()}'`).replace("$2", "'older-2'"));
    expect(seen.map((r) => String(r.id))).toEqual([String(older.id)]);
    expect(await runOnce(app, { db: h().db, now: clock.now, queues: ["none"] })).toMatchObject({ recovered: 2 });
  });
});

describe("a job leased to a live engine that does not know it (a claim answer lost, or forgotten)", () => {
  let t: TestDatabase;
  beforeAll(async () => { t = await openTestDatabase("owner_lease"); });
  afterAll(async () => { await t?.close(); });
  beforeEach(async () => { await t.reset(); });


  it("is found by its heartbeat and put back, attempt refunded, though its owner's lease lives on", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const gate = deferred();
    const began = deferred();
    const slow = app.task("slow", { args: v.object({}) }, async () => { began.resolve(); await gate.promise; });
    await slow.using(t.db).enqueue({});
    const pool = new BeatPool({ connectionString: t.url, max: 4 });
    const run = runOnce(app, { db: drizzle(pool) as unknown as Db, now: clock.now, heartbeat: "100ms" });
    await began.promise;
    const [{ owner }] = await t.rows<{ owner: string }>("select owner from akadze.owners");
    // Leased to the running engine, unknown to it: a task it does not even declare, so it could never claim it.
    const [ghost] = await t.rows<{ id: string }>(`insert into akadze.jobs (task, state, attempt, lease_owner)
      values ('ghost', 'running', 1, $1) returning id`, [owner]);
    const beats = pool.beats;
    await waitFor(() => pool.beats >= beats + 2, "two heartbeats after the ghost was leased");
    gate.resolve();
    expect(await run).toMatchObject({ succeeded: 1 });
    await pool.end();
    expect(await t.rows(`select state, attempt, lease_owner from akadze.jobs where id = ${ghost.id}`))
      .toEqual([{ state: "queued", attempt: 0, lease_owner: null }]);
  });
});
