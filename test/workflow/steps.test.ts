// Workflows (issue 26): steps stored in akadze.steps, replayed across invocations, parked with no slot,
// lease or connection held, woken by events; on every driver, with a test clock.
import { beforeEach, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import * as v from "valibot";
import { ChildJobFailed, createApp, Fail, getJob, pruneJobs, requestCancel, requeue, runOnce, sendEvent, sendEventQuery, StepTimeout, type Db } from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { waitFor } from "../support/wait-for.js";
import { abortedOf } from "../support/deferred.js";

const DAY = 86_400_000;

forEachDriver((h, driver) => {
  beforeEach(async () => {
    await h().db.execute(sql`create table if not exists wf_notes (id serial primary key, text text not null)`);
    await h().db.execute(sql`truncate wf_notes`);
  });
  const notes = async () => (await h().rows("select text from wf_notes order by id")).map((r) => r.text);
  const note = (db: Db, text: string) => db.execute(sql`insert into wf_notes (text) values (${text})`);
  const job = async (id: number) => (await h().rows(`select state, attempt, result, errors, run_at from akadze.all_jobs where id = ${id}`))[0];
  const steps = (id: number) => h().rows(`select name, kind, state, result, attempts from akadze.steps where job_id = ${id} order by seq`);
  const invoke = (app: ReturnType<typeof createApp>, clock: ManualClock) => runOnce(app, { db: h().db, now: clock.now, budget: "1h" });

  it("a 4-step workflow with a 1-day sleep and an event completes across invocations, each step run once", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const runs = { charge: 0, email: 0, followUp: 0 };
    const order = app.workflow("order.fulfil", { args: v.object({ orderId: v.number() }) }, async ({ orderId }, step) => {
      const charge = await step.run("charge", () => { runs.charge++; return { chargeId: `ch-${orderId}`, amount: 42 }; });
      const shipped = await step.waitForEvent<{ orderId: number; carrier: string }>("shipped", { event: "order.shipped", match: { orderId }, timeout: "7d" });
      await step.run("email", () => { runs.email++; return `sent to ${shipped?.carrier}`; });
      await step.sleep("cool-off", "1d");
      const followUp = await step.run("follow-up", () => { runs.followUp++; return "asked for a review"; });
      return { charge: charge.chargeId, carrier: shipped?.carrier, followUp };
    });
    const id = await order.using(h().db).enqueue({ orderId: 7 });

    await invoke(app, clock); // charge, then parks on the event
    expect(runs).toEqual({ charge: 1, email: 0, followUp: 0 });
    expect(await job(id)).toMatchObject({ state: "queued", attempt: 0 }); // parked: no attempt spent, no lease held
    expect((await job(id)).run_at).toBe("2026-06-08T12:00:00+00:00");

    clock.advance(60_000);
    expect((await invoke(app, clock)).claimed).toBe(0); // nothing due: it holds no slot while it waits
    // Another order's event does not match.
    expect(await sendEvent(h().db, "order.shipped", { orderId: 8, carrier: "dhl" }, { now: clock.now() })).toEqual({ delivered: 0, woken: 0 });
    expect(await sendEvent(h().db, "order.shipped", { orderId: 7, carrier: "ups" }, { now: clock.now() })).toEqual({ delivered: 1, woken: 1 });

    await invoke(app, clock); // replays charge from storage, takes the event, emails, parks for a day
    expect(runs).toEqual({ charge: 1, email: 1, followUp: 0 });
    expect(await job(id)).toMatchObject({ state: "queued", attempt: 0 });

    clock.advance(DAY - 1000);
    expect((await invoke(app, clock)).claimed).toBe(0);
    clock.advance(1000);
    await invoke(app, clock);
    expect(runs).toEqual({ charge: 1, email: 1, followUp: 1 });
    expect(await job(id)).toMatchObject({ state: "succeeded", attempt: 1,
      result: { charge: "ch-7", carrier: "ups", followUp: "asked for a review" } });
    expect(await steps(id)).toEqual([
      { name: "charge", kind: "run", state: "done", result: { chargeId: "ch-7", amount: 42 }, attempts: 1 },
      { name: "shipped", kind: "event", state: "done", result: { orderId: 7, carrier: "ups" }, attempts: 1 },
      { name: "email", kind: "run", state: "done", result: "sent to ups", attempts: 1 },
      { name: "cool-off", kind: "sleep", state: "done", result: null, attempts: 1 },
      { name: "follow-up", kind: "run", state: "done", result: "asked for a review", attempts: 1 },
    ]);
    const detail = await getJob(h().db, id);
    expect(detail?.steps?.map((s) => [s.name, s.state])).toEqual([
      ["charge", "done"], ["shipped", "done"], ["email", "done"], ["cool-off", "done"], ["follow-up", "done"],
    ]);
  });

  it("onTransition hooks see a workflow's steps (results, errors, what it waits for) in the change's transaction; other jobs get no steps", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const seen: { to: string; task: string; steps: unknown }[] = [];
    app.hooks.onTransition(async (t) => {
      seen.push({ to: t.to, task: t.task, steps: t.steps ? (await t.steps()).map((s) => [s.name, s.state, s.result, s.errors.map((e) => e.message), s.waitingFor]) : "none" });
    });
    const plain = app.task("plain", async () => "done");
    const flow = app.workflow("hooked", { backoff: () => "1m" }, async (_a, step) => {
      await step.run("charge", () => ({ chargeId: "ch_1" }));
      await step.run("label", ({ attempt }) => { if (attempt === 1) throw new Error("printer offline"); return "printed"; });
      return step.waitForEvent("shipped", { match: { orderId: 7 }, timeout: "1d" });
    });
    await flow.using(h().db).enqueue({});
    await plain.using(h().db).enqueue({});
    await invoke(app, clock); // charge done, label fails: the run parks for the label's backoff
    clock.advance(60_000);
    await invoke(app, clock); // label done, parks on the event
    await sendEvent(h().db, "shipped", { orderId: 7 }, { now: clock.now() });
    await invoke(app, clock);
    const hooked = seen.filter((s) => s.task === "hooked");
    expect(hooked.map((s) => s.to)).toEqual(["running", "queued", "running", "queued", "running", "succeeded"]);
    expect(hooked[0].steps).toEqual([]); // started, nothing stored yet
    expect(hooked.filter((s) => s.to !== "running")).toEqual([
      { to: "queued", task: "hooked", steps: [["charge", "done", { chargeId: "ch_1" }, [], null], ["label", "retrying", null, ["printer offline"], null]] },
      { to: "queued", task: "hooked", steps: [["charge", "done", { chargeId: "ch_1" }, [], null], ["label", "done", "printed", ["printer offline"], null],
        ["shipped", "waiting", null, [], 'event "shipped" matching {"orderId":7} until 2026-06-02T12:01:00.000Z']] },
      { to: "succeeded", task: "hooked", steps: [["charge", "done", { chargeId: "ch_1" }, [], null], ["label", "done", "printed", ["printer offline"], null],
        ["shipped", "done", { orderId: 7 }, [], null]] },
    ]);
    expect(seen.filter((s) => s.task === "plain")).toEqual([{ to: "running", task: "plain", steps: "none" }, { to: "succeeded", task: "plain", steps: "none" }]);
  });

  it("an event sent in a rolled-back transaction wakes nothing; the same event committed does", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const id = await app.workflow("wait", async (_a, step) => step.waitForEvent("paid", { match: { orderId: 1 }, timeout: "1d" }))
      .using(h().db).enqueue({});
    await invoke(app, clock);
    const sent = { orderId: 1, amount: 5 };
    if (driver === "neon-http") {
      // A batch is neon-http's transaction: its last statement fails, so the event rolls back with it.
      await expect((h().db as any).batch([sendEventQuery(h().db, "paid", sent, { now: clock.now() }), h().db.execute(sql`select 1 / 0`)])).rejects.toThrow();
    } else {
      await expect(h().db.transaction(async (tx) => {
        await note(tx as unknown as Db, "paid");
        expect(await sendEvent(tx as unknown as Db, "paid", sent, { now: clock.now() })).toEqual({ delivered: 1, woken: 1 });
        throw new Error("the payment row failed");
      })).rejects.toThrow("the payment row failed");
    }
    expect(await notes()).toEqual([]);
    expect((await steps(id))[0]).toMatchObject({ state: "waiting" });
    expect((await invoke(app, clock)).claimed).toBe(0);

    if (driver === "neon-http") {
      await (h().db as any).batch([h().db.execute(sql`insert into wf_notes (text) values ('paid')`), sendEventQuery(h().db, "paid", sent, { now: clock.now() })]);
    } else {
      await h().db.transaction(async (tx) => { await note(tx as unknown as Db, "paid"); await sendEvent(tx as unknown as Db, "paid", sent, { now: clock.now() }); });
    }
    await invoke(app, clock);
    expect(await notes()).toEqual(["paid"]);
    expect(await job(id)).toMatchObject({ state: "succeeded", result: sent });
  });

  it("a wait that times out returns null (documented), and an event after the timeout delivers nothing", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const id = await app.workflow("wait", async (_a, step) => {
      const event = await step.waitForEvent("approved", { timeout: "2h" });
      return { event, afterwards: await step.run("after", () => "went on") };
    }).using(h().db).enqueue({});
    await invoke(app, clock);
    clock.advance(2 * 3_600_000);
    expect(await sendEvent(h().db, "approved", { by: "late" }, { now: clock.now() })).toEqual({ delivered: 0, woken: 0 });
    await invoke(app, clock);
    expect(await job(id)).toMatchObject({ state: "succeeded", result: { event: null, afterwards: "went on" } });
    expect((await steps(id))[0]).toMatchObject({ name: "approved", state: "timed_out" });
  });

  it("a throwing step retries alone with its own attempts and backoff; stored steps never re-run", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const runs = { first: 0, flaky: 0 };
    const id = await app.workflow("flaky", { maxAttempts: 2 }, async (_a, step) => {
      await step.run("first", () => { runs.first++; return 1; });
      return step.run("flaky", ({ attempt }) => {
        runs.flaky++;
        if (attempt < 3) throw new Error(`vendor down (${attempt})`);
        return "ok";
      }, { maxAttempts: 4, backoff: { wait: "10s", backoff: 2 } });
    }).using(h().db).enqueue({});
    await invoke(app, clock);
    expect(runs).toEqual({ first: 1, flaky: 1 });
    expect(await job(id)).toMatchObject({ state: "queued", attempt: 0 }); // a step's failure spends no job attempt
    expect((await job(id)).run_at).toBe("2026-06-01T12:00:10+00:00");
    clock.advance(10_000);
    await invoke(app, clock);
    expect((await job(id)).run_at).toBe("2026-06-01T12:00:30+00:00"); // 10 s, then 20 s
    clock.advance(20_000);
    await invoke(app, clock);
    expect(runs).toEqual({ first: 1, flaky: 3 });
    expect(await job(id)).toMatchObject({ state: "succeeded", attempt: 1, result: "ok" });
    const [, flaky] = await h().rows(`select attempts, errors from akadze.steps where job_id = ${id} order by seq`);
    expect(flaky.attempts).toBe(3);
    expect(flaky.errors.map((e: any) => e.message)).toEqual(["vendor down (1)", "vendor down (2)"]);
  });

  it("a step past its own timeout fails that attempt with StepTimeout, retried by the step's policy (retryOn aside); its late result and writes are not kept", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const tries = { quote: 0, record: 0 };
    const id = await app.workflow("timed", async (_a, step) => {
      const quote = await step.run("quote", ({ attempt }) => {
        tries.quote++;
        if (attempt === 1) clock.advance(6_000); // the vendor took 6 s of the clock
        return `quote ${attempt}`;
      }, { timeout: "5s", maxAttempts: 3, backoff: () => 10_000, retryOn: () => false });
      const options = { timeout: "5s", backoff: () => 0 } as const;
      if (driver === "neon-http") {
        await step.batch("record", (db) => {
          tries.record++;
          if (tries.record === 1) clock.advance(6_000); // building took too long: the batch is not sent
          return [db.execute(sql`insert into wf_notes (text) values (${`try ${tries.record}`})`)];
        }, options);
      } else {
        await step.transaction("record", async (tx) => {
          tries.record++;
          await note(tx, `try ${tries.record}`);
          if (tries.record === 1) clock.advance(6_000); // the write was slow: it rolls back with the attempt
        }, options);
      }
      return quote;
    }).using(h().db).enqueue({});
    await invoke(app, clock);
    expect(await job(id)).toMatchObject({ state: "queued", attempt: 0 }); // a step's timeout spends no job attempt
    const [quote] = await h().rows(`select state, result, attempts, errors from akadze.steps where job_id = ${id} order by seq`);
    expect(quote).toMatchObject({ state: "retrying", result: null, attempts: 1 });
    expect(quote.errors.map((e: any) => [e.kind, e.message])).toEqual([["StepTimeout", 'step "quote" ran past its timeout of 5000 ms']]);
    clock.advance(10_000);
    await invoke(app, clock); // quote's second attempt; record's first times out
    await invoke(app, clock); // record again (no backoff)
    expect(await job(id)).toMatchObject({ state: "succeeded", attempt: 1, result: "quote 2" });
    expect(tries).toEqual({ quote: 2, record: 2 });
    expect(await notes()).toEqual(["try 2"]);
    expect(await steps(id)).toMatchObject([{ name: "quote", state: "done", attempts: 2 }, { name: "record", state: "done", attempts: 2 }]);
  });

  it("a step that hangs past its timeout is cut off by its signal; the job's own timeout still bounds the run", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let reason: unknown;
    const hung = await app.workflow("hung", async (_a, step) => step.run("hang", ({ signal }) => new Promise<string>((resolve) => {
      signal.addEventListener("abort", () => { reason = signal.reason; resolve("too late"); });
    }), { timeout: "50ms", maxAttempts: 1 })).using(h().db).enqueue({});
    await invoke(app, clock);
    expect(reason).toBeInstanceOf(StepTimeout);
    const row = await job(hung);
    expect(row).toMatchObject({ state: "failed" });
    expect(row.errors.at(-1)).toMatchObject({ kind: "StepFailed", message: expect.stringMatching(/^step "hang" failed after 1 attempt: step "hang" ran past its timeout of 50 ms/) });
    expect(await steps(hung)).toMatchObject([{ name: "hang", state: "failed", result: null }]);

    // A generous step timeout does not stretch the job's: the run past the task's 5 s is a JobTimeout.
    const bounded = await app.workflow("bounded", { timeout: "5s" }, async (_a, step) => {
      await step.run("slow", () => { clock.advance(6_000); return 1; }, { timeout: "1m" });
    }).using(h().db).enqueue({});
    await invoke(app, clock);
    expect(await job(bounded)).toMatchObject({ state: "queued", attempt: 1 });
    expect((await job(bounded)).errors.at(-1)).toMatchObject({ kind: "JobTimeout" });

    const refused = await app.workflow("bad-timeout", async (_a, step) => step.run("x", () => 1, { timeout: "soon" as never })).using(h().db).enqueue({});
    await invoke(app, clock);
    expect((await job(refused)).errors.at(-1)).toMatchObject({ kind: "InvalidInput" });
  });

  it("a step that spends its attempts fails the workflow with StepFailed; retryOn refusing fails it at once", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const id = await app.workflow("doomed", { maxAttempts: 2, backoff: () => "1s" }, async (_a, step) => {
      await step.run("ok", () => 1);
      await step.run("always", () => { throw new Error("no such card"); });
    }).using(h().db).enqueue({});
    await invoke(app, clock);
    clock.advance(1000);
    await invoke(app, clock);
    const row = await job(id);
    expect(row).toMatchObject({ state: "failed" });
    expect(row.errors.at(-1)).toMatchObject({ kind: "StepFailed", message: 'step "always" failed after 2 attempts: no such card\ncaused by Error: no such card' });
    expect(await steps(id)).toMatchObject([{ name: "ok", state: "done" }, { name: "always", state: "failed", attempts: 2 }]);
    // requeue gives the failed step a fresh round of attempts; the stored step still does not run again
    expect(await requeue(h().db, id)).toBe(true);
    await invoke(app, clock);
    expect(await steps(id)).toMatchObject([{ name: "ok", state: "done" }, { name: "always", state: "retrying", attempts: 1 }]);

    const refused = await app.workflow("refused", { retryOn: (e) => !(e instanceof TypeError) }, async (_a, step) => {
      await step.run("bad", () => { throw new TypeError("a bug"); });
    }).using(h().db).enqueue({});
    await invoke(app, clock);
    expect((await job(refused)).errors.at(-1)).toMatchObject({ kind: "StepFailed", message: 'step "bad" failed after 1 attempt: a bug\ncaused by TypeError: a bug' });
  });

  it("a step's writes commit with its stored result, or roll back with its failure (transaction, or batch on neon-http)", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    let calls = 0;
    const id = await app.workflow("writes", { backoff: () => 0 }, async (_a, step) => {
      if (driver === "neon-http") {
        await step.batch("record", (db) => {
          calls++;
          return [db.execute(sql`insert into wf_notes (text) values (${`try ${calls}`})`), ...(calls === 1 ? [db.execute(sql`select 1 / 0`)] : [])];
        });
      } else {
        await step.transaction("record", async (tx) => {
          calls++;
          await note(tx, `try ${calls}`);
          if (calls === 1) throw new Error("constraint");
          return calls;
        });
      }
      await step.run("next", () => { throw new Error("later failure"); }, { maxAttempts: 1 });
    }).using(h().db).enqueue({});
    await invoke(app, clock);
    await invoke(app, clock);
    expect(await notes()).toEqual(["try 2"]); // the first try rolled back; the stored step never wrote again
    expect(calls).toBe(2);
    expect(await job(id)).toMatchObject({ state: "failed" });
  });

  it("Promise.all of steps runs them in parallel; a replay reaching another step order fails with a clear error", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    let version = 1;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    const id = await app.workflow("fan", async (_a, step) => {
      // "a" finishes only once "b" has run: run one after the other, they would never end.
      const [a, b] = await Promise.all([
        step.run("a", async () => { await gate; ran.push("a"); return 1; }),
        step.run("b", () => { release(); ran.push("b"); return 2; }),
      ]);
      if (version === 2) await step.run("inserted", () => 0); // reached where the stored run had its sleep
      await step.sleep("pause", "1m");
      return a + b;
    }).using(h().db).enqueue({});
    await invoke(app, clock);
    expect(ran.sort()).toEqual(["a", "b"]);
    version = 2; // a deploy changed the workflow while it slept
    clock.advance(60_000);
    await invoke(app, clock);
    const row = await job(id);
    expect(row.state).toBe("failed");
    expect(row.errors.at(-1)).toMatchObject({ kind: "WorkflowNondeterminism" });
    expect(row.errors.at(-1).message).toContain('"inserted"');
    expect(ran).toHaveLength(2);

    const dup = await app.workflow("dup", async (_a, step) => {
      for (let i = 0; i < 2; i++) await step.run("send", () => i);
    }).using(h().db).enqueue({});
    await invoke(app, clock);
    expect((await job(dup)).errors.at(-1).message).toMatch(/step name "send" is used twice/);
  });

  it("an event delivered while its run is still going is not slept through: the run goes on at once", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const id = await app.workflow("racy", async (_a, step) => {
      const [event] = await Promise.all([
        step.waitForEvent("ready", { timeout: "1d" }),
        step.run("announce", async () => {
          await waitFor(async () => (await steps(jobId)).some((s) => s.name === "ready" && s.state === "waiting"), "the wait to be stored");
          return sendEvent(h().db, "ready", { n: 1 }, { now: clock.now() });
        }),
      ]);
      return event;
    }).using(h().db).enqueue({});
    const jobId = id;
    await invoke(app, clock); // the wait parks, the event comes while the job is running
    expect(await job(id)).toMatchObject({ state: "queued", run_at: "2026-06-01T12:00:00+00:00" }); // due now, not in a day
    await invoke(app, clock);
    expect(await job(id)).toMatchObject({ state: "succeeded", result: { n: 1 } });
    expect((await steps(id))[1]).toMatchObject({ name: "announce", result: { delivered: 1, woken: 0 } });
  });

  it("a cancel request reaches a running workflow: the step sees its signal, no later step starts, the job ends cancelled", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    const id = await app.workflow("long", async (_a, step, job) => {
      await step.run("one", async ({ signal }) => {
        ran.push("one");
        await requestCancel(h().db, job.id);
        await abortedOf(signal); // the heartbeat saw it (perhaps before this line)
      });
      await step.run("two", () => { ran.push("two"); });
    }).using(h().db).enqueue({});
    await runOnce(app, { db: h().db, now: clock.now, heartbeat: 20 });
    expect(ran).toEqual(["one"]);
    expect(await job(id)).toMatchObject({ state: "cancelled", attempt: 0 });
  });

  it("a parked workflow is cancellable, and the run yields between steps when its budget is short", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const parked = await app.workflow("parked", async (_a, step) => { await step.sleep("long", "30d"); }).using(h().db).enqueue({});
    await invoke(app, clock);
    expect(await requestCancel(h().db, parked)).toBe(true);
    expect(await job(parked)).toMatchObject({ state: "cancelled" });

    const runsPerInvocation: number[] = [];
    let count = 0;
    const slow = await app.workflow("slow", { minStepTime: "10s" }, async (_a, step) => {
      for (const name of ["one", "two", "three"]) {
        await step.run(name, () => { count++; clock.advance(8_000); return name; }); // each step takes 8 s of the clock
      }
    }).using(h().db).enqueue({});
    // Budget 20 s: after the first step (8 s), 12 s are left, enough for one more; after it, 4 s < 10 s: yield.
    for (let i = 0; i < 3 && (await job(slow)).state !== "succeeded"; i++) {
      const before = count;
      await runOnce(app, { db: h().db, now: clock.now, budget: "20s", drain: false });
      runsPerInvocation.push(count - before);
    }
    expect(runsPerInvocation).toEqual([2, 1]);
    expect(await job(slow)).toMatchObject({ state: "succeeded", attempt: 1 });
  });

  it("a step result over 1 MiB of JSON fails the workflow at once, as a task's does, and is not stored", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ran: string[] = [];
    const id = await app.workflow("big-step", async (_a, step) => {
      await step.run("small", () => "ok");
      await step.run("huge", () => { ran.push("huge"); return { blob: "z".repeat(1024 * 1024 + 1) }; });
      await step.run("after", () => { ran.push("after"); });
    }).using(h().db).enqueue({});
    await invoke(app, clock);
    expect(ran).toEqual(["huge"]); // one attempt: the same result would be refused again
    expect(await job(id)).toMatchObject({ state: "failed" });
    const [entry] = (await job(id)).errors;
    expect(entry.kind).toBe("OutcomeNotStorable");
    expect(entry.message).toMatch(/step "huge": the result is 1048588 bytes of JSON, over the 1048576-byte cap/);
    expect((await steps(id)).map((s) => [s.name, s.state])).toEqual([["small", "done"]]);
  });

  it("an event for a cancelled workflow's wait is delivered to nobody and changes nothing", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const waiter = app.workflow("waiter", async (_a, step) => step.waitForEvent("go", { event: "go", timeout: "7d" }));
    const cancelled = await waiter.using(h().db).enqueue({});
    const live = await waiter.using(h().db).enqueue({});
    await invoke(app, clock); // both park on the event
    expect(await requestCancel(h().db, cancelled)).toBe(true);
    const before = await steps(cancelled);
    expect(before).toMatchObject([{ name: "go", state: "waiting" }]);

    expect(await sendEvent(h().db, "go", { n: 1 }, { now: clock.now() })).toEqual({ delivered: 1, woken: 1 });
    expect(await steps(cancelled)).toEqual(before);
    expect(await job(cancelled)).toMatchObject({ state: "cancelled" });
    expect(await steps(live)).toMatchObject([{ name: "go", state: "done", result: { n: 1 } }]);
  });

  it("retention deletes a finished workflow's steps with its job, and keeps those of a job it keeps", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const flow = app.workflow("short", async (_a, step) => step.run("only", () => 1));
    const old = await flow.using(h().db).enqueue({});
    await invoke(app, clock);
    clock.advance(10 * DAY);
    const recent = await flow.using(h().db).enqueue({});
    await invoke(app, clock); // its claim's retention (7 days by default) prunes the old job
    expect(await job(old)).toBeUndefined();
    expect(await steps(old)).toEqual([]);
    expect(await steps(recent)).toHaveLength(1);
    clock.advance(DAY);
    expect(await pruneJobs(h().db, { olderThan: "1h", now: clock.now() })).toEqual({ deleted: 1 });
    expect(await steps(recent)).toEqual([]);
  });

  it("a parent parked on child jobs runs again as soon as the last of them ends, not at its next poll", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const square = app.task("math.square", { args: v.object({ n: v.number() }) }, async ({ n }) => n * n);
    const id = await app.workflow("sum.squares", async (_a, step) => {
      const children = await step.runJobs("squares", square, [{ n: 2 }, { n: 3 }], { poll: "1h" });
      return children.reduce((sum, c) => sum + (c.result as number), 0);
    }).using(h().db).enqueue({});
    // The test clock never moves: with only its hourly poll, the parent would never run again.
    for (let i = 0; i < 4 && (await job(id)).state !== "succeeded"; i++) await invoke(app, clock);
    expect(await job(id)).toMatchObject({ state: "succeeded", result: 13 });
    expect(await h().rows("select count(*)::int as n from akadze.child_waits")).toEqual([{ n: 0 }]);
  });

  it("fan-out and fan-in: child jobs are enqueued once with their step, and the parked parent gets their outcomes", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const resize = app.task("image.resize", { args: v.object({ width: v.number() }), maxAttempts: 1 }, async ({ width }) => {
      if (width === 0) throw new Fail("no width");
      return { url: `img-${width}.png` };
    });
    const child = app.workflow("child.flow", { args: v.object({ n: v.number() }) }, async ({ n }, step) => step.run("double", () => n * 2));
    let replays = 0;
    const id = await app.workflow("parent", async (_a, step) => {
      replays++;
      const [group, doubled] = await Promise.all([
        step.runJobs("resize", resize, [{ width: 100 }, { width: 0 }, { width: 300 }], { poll: "5s" }),
        step.invoke("child", child, { n: 21 }, { poll: "5s" }),
      ]);
      let failed: string | null = null;
      try { await step.invoke("bad", resize, { width: 0 }, { poll: "5s" }); } catch (error) { if (error instanceof ChildJobFailed) failed = error.message; else throw error; }
      return { states: group.map((c) => c.state), urls: group.map((c) => c.result?.url ?? null), doubled, failed };
    }).using(h().db).enqueue({});

    await invoke(app, clock); // the parent enqueues 4 children and parks
    await invoke(app, clock); // the children run
    // (The two steps enqueue concurrently, so which comes first is open; each enqueues its own children in order.)
    expect(await h().rows("select task, state from akadze.all_jobs where id <> " + id + " order by task, id")).toEqual([
      { task: "child.flow", state: "succeeded" },
      { task: "image.resize", state: "succeeded" }, { task: "image.resize", state: "failed" }, { task: "image.resize", state: "succeeded" },
    ]);
    clock.advance(5000);
    await invoke(app, clock); // collects them, starts "bad", parks
    await invoke(app, clock); // "bad" fails
    clock.advance(5000);
    await invoke(app, clock);
    expect(await job(id)).toMatchObject({ state: "succeeded", result: {
      states: ["succeeded", "failed", "succeeded"], urls: ["img-100.png", null, "img-300.png"], doubled: 42,
      failed: expect.stringMatching(/^child job \d+ ended failed: no width$/),
    } });
    expect(await h().rows("select count(*)::int as n from akadze.all_jobs")).toEqual([{ n: 6 }]); // 5 children, each enqueued once
    expect(replays).toBe(3);
  });
});
