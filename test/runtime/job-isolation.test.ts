// One job never decides another's fate (SPEC §3.3): an outcome Postgres cannot store, a thrown value with no text, a
// throwing transition hook, a body that ignores its signal or never ends, a job too large for a claim over HTTP, or a
// bad option affects that job (or that call) only.
import { expect, it } from "vitest";
import * as v from "valibot";
import { sql } from "drizzle-orm";
import { createApp, InvalidInput, Retry, runOnce, Fail, setLimit } from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";

forEachDriver((h) => {
  it("the good jobs of a poisoned batch succeed exactly once and each poison is stored as its own job's outcome", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const runs = new Map<number, number>();
    const task = app.task("mixed", { maxAttempts: 3, args: v.object({ kind: v.string() }) }, async (args, job) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      if (args.kind === "nul") return { text: "a\u0000b" };
      if (args.kind === "surrogate") throw new Error("broken \ud800 text");
      if (args.kind === "retry") throw new Retry("200000000d");
      return { ok: true };
    });
    const kinds = ["ok", "nul", "ok", "surrogate", "ok", "ok", "retry", "ok", "ok", "ok", "ok", "ok"];
    const ids = await task.using(h().db).enqueueMany(kinds.map((kind) => ({ kind })));
    const summary = await runOnce(app, { db: h().db, now: clock.now, batchSize: 20, drain: false });

    expect(summary).toMatchObject({ claimed: 12, succeeded: 10, retried: 2, lost: 0 });
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    const rows = await h().rows<{ id: number; state: string; result: unknown; errors: { message: string }[]; far: boolean }>(
      `select id, state, result, errors, run_at > '2100-01-01' as far from akadze.all_jobs order by id`);
    const byKind = (kind: string) => rows[ids[kinds.indexOf(kind)] - ids[0]];
    expect(rows.filter((r) => r.state === "succeeded")).toHaveLength(10);
    expect(byKind("nul")).toMatchObject({ state: "succeeded", result: { text: "a\ufffdb" } });
    expect(byKind("surrogate")).toMatchObject({ state: "queued", errors: [{ message: "broken \ufffd text" }] });
    expect(byKind("retry")).toMatchObject({ state: "queued", far: true }); // clamped to a storable time, far away
  });

  it("a thrown value that cannot be turned into text is that job's error; the invocation carries on", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const hostile = new Proxy({}, { get() { throw new Error("no"); }, getPrototypeOf() { throw new Error("no"); }, ownKeys() { throw new Error("no"); } });
    const throwing = { toString() { throw new Error("no"); } };
    const values: Record<string, unknown> = { bare: Object.create(null), toString: throwing, proxy: hostile, payload: { code: 42 } };
    const task = app.task("throws", { maxAttempts: 2, args: v.object({ what: v.string() }) }, async ({ what }) => {
      if (what === "fine") return "ok";
      throw values[what];
    });
    await task.using(h().db).enqueueMany(["bare", "fine", "toString", "proxy", "fine", "payload"].map((what) => ({ what })));
    const summary = await runOnce(app, { db: h().db, now: clock.now, slots: 2, drain: false });
    expect(summary).toMatchObject({ claimed: 6, succeeded: 2, retried: 4, lost: 0 });
    const errors = await h().rows<{ what: string; errors: { kind: string; message: string; payload?: unknown }[] }>(
      `select args->>'what' as what, errors from akadze.all_jobs where state = 'queued' order by id`);
    expect(errors.map((e) => e.what)).toEqual(["bare", "toString", "proxy", "payload"]);
    expect(errors.every((e) => e.errors.length === 1)).toBe(true);
    expect(errors[3].errors[0]).toMatchObject({ message: '{"code":42}', payload: { code: 42 } }); // the payload is kept
  });

  it("a throwing transition hook affects only its own job: other jobs and queues run, and the failure is in the job's errors", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const seen: string[] = [];
    app.hooks.onTransition((t) => {
      if (t.to === "failed") throw new Error("alerting is down");
      seen.push(`${t.task}:${t.to}`);
    });
    app.task("doomed", { queue: "a" }, async () => { throw new Fail("vendor said no"); });
    app.task("fine", { queue: "b" }, async () => "ok");
    await app.taskByName("doomed").using(h().db).enqueue({});
    await app.taskByName("fine").using(h().db).enqueueMany([{}, {}]);
    const summary = await runOnce(app, { db: h().db, now: clock.now, drain: false });
    expect(summary).toMatchObject({ claimed: 3, succeeded: 2, failed: 1, lost: 0 });
    const rows = await h().rows<{ task: string; state: string; kinds: string[] }>(
      `select task, state, (select jsonb_agg(e->>'kind') from jsonb_array_elements(errors) e) as kinds from akadze.all_jobs order by id`);
    expect(rows).toEqual([
      { task: "doomed", state: "failed", kinds: ["Fail", "TransitionHookFailed"] },
      { task: "fine", state: "succeeded", kinds: null },
      { task: "fine", state: "succeeded", kinds: null },
    ]);
    expect(seen.filter((s) => s === "fine:succeeded")).toHaveLength(2);
    // The next claim is not blocked either.
    await app.taskByName("fine").using(h().db).enqueue({});
    expect(await runOnce(app, { db: h().db, now: clock.now })).toMatchObject({ succeeded: 1 });
  });

  it("a body that ignores its signal past its timeout keeps its maxRunning slot until it ends: no more bodies run than the limit", async () => {
    const app = createApp();
    let running = 0, most = 0, bodies = 0;
    const task = app.task("stubborn", { timeout: "30ms", maxAttempts: 1 }, async () => {
      bodies++;
      most = Math.max(most, ++running);
      await new Promise((resolve) => setTimeout(resolve, 120)); // ignores job.signal
      running--;
    });
    await setLimit(h().db, "export", { maxRunning: 2 });
    await task.using(h().db, { limitKey: "export" }).enqueueMany(Array.from({ length: 6 }, () => ({})));
    let failed = 0;
    for (let i = 0; i < 20 && failed < 6; i++) failed += (await runOnce(app, { db: h().db, slots: 8, batchSize: 8, budget: "20s" })).failed;

    expect(most).toBe(2);
    expect(bodies).toBe(6);
    expect(failed).toBe(6);
    const rows = await h().rows<{ state: string; n: number; kinds: string[] }>(
      "select state, count(*)::int as n, array_agg(distinct e->>'kind') as kinds from akadze.all_jobs, jsonb_array_elements(errors) e group by state");
    expect(rows).toEqual([{ state: "failed", n: 6, kinds: ["JobTimeout"] }]);
  });

  it("a body that never ends is abandoned after its grace (the longer of its timeout and the lease): its timeout is recorded and the invocation ends", async () => {
    const app = createApp();
    const task = app.task("hung", { timeout: "100ms" }, () => new Promise<never>(() => {}));
    const [id] = await task.using(h().db).enqueueMany([{}]);
    // Within its grace the body keeps its slot and lease, so no retry runs beside it (lingerGraceMs); a 1 s lease keeps it short.
    const summary = await runOnce(app, { db: h().db, budget: "1500ms", lease: "1s" });

    expect(summary).toMatchObject({ claimed: 1, retried: 1, abandoned: 1, lost: 0 });
    // (How soon after the budget it ends is the bench's to measure: here, that it ends at all, its body still hung.)
    const [row] = await h().rows<{ state: string; kinds: string[] }>(
      `select state, array(select e->>'kind' from jsonb_array_elements(errors) e) as kinds from akadze.all_jobs where id = ${id}`);
    expect(row).toEqual({ state: "queued", kinds: ["JobTimeout"] });
  });

  it("a bad number option is InvalidInput naming the field, and nothing is claimed", async () => {
    const app = createApp();
    await app.task("t", async () => {}).using(h().db).enqueue({});
    for (const options of [{ slots: NaN }, { batchSize: -1 }, { slots: 1.5 }, { lease: "0ms" }, { heartbeat: 0 }]) {
      await expect(runOnce(app, { db: h().db, ...(options as object) })).rejects.toThrow(InvalidInput);
    }
    await expect(runOnce(app, { db: h().db, slots: NaN })).rejects.toThrow(/slots/);
    expect(await h().rows("select state, attempt from akadze.all_jobs")).toEqual([{ state: "queued", attempt: 0 }]);
  });
});

forEachDriver((h) => {
  it("claims and completions stay under Neon's request and response caps whatever the jobs carry", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const runs = new Map<number, number>();
    const big = "x".repeat(250_000);
    const task = app.task("heavy", { args: v.object({ blob: v.string(), echo: v.boolean() }) }, async ({ blob, echo }, job) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      return echo ? { blob } : null;
    });
    for (let i = 0; i < 50; i += 10) {
      // In requests of 2.5 MB: a single enqueue request over neon-http is itself capped at 10 MB.
      await task.using(h().db).enqueueMany(Array.from({ length: 10 }, (_, j) => ({ blob: big, echo: (i + j) % 2 === 0 })));
    }
    const summary = await runOnce(app, { db: h().db, now: clock.now, batchSize: 50 });
    expect(summary).toMatchObject({ succeeded: 50, lost: 0 });
    expect(runs.size).toBe(50);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
  });

  it("a job too large for any claim over HTTP fails with a sentence naming the cap; the others run", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const task = app.task("sized", { args: v.object({ blob: v.string() }) }, async () => "ok");
    // Built on the server: a request this large is itself over what an HTTP enqueue may send.
    await h().db.execute(sql.raw(`insert into akadze.jobs (task, args, run_at) values ('sized', jsonb_build_object('blob', repeat('y', ${7 * 1024 * 1024})), '${clock.now().toISOString()}')`));
    await task.using(h().db).enqueue({ blob: "small" });
    const summary = await runOnce(app, { db: h().db, now: clock.now });
    expect(summary).toMatchObject({ succeeded: 1, failed: 1 });
    const [row] = await h().rows<{ state: string; errors: { kind: string; message: string }[] }>("select state, errors from akadze.all_jobs order by id limit 1");
    expect(row.state).toBe("failed");
    expect(row.errors[0].kind).toBe("ArgsTooLarge");
    expect(row.errors[0].message).toMatch(/over the \d+ bytes one claim over HTTP Postgres may carry/);
  });
}, ["neon-http"]);
