// job.progress(value) and job.log(...) (issue 39): stored with the job coalesced, shown by getJob, capped, pruned
// with the job, and streamed to a page as server-sent events, on every driver.
import * as v from "valibot";
import { Hono } from "hono";
import { sql } from "drizzle-orm";
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, current, getJob, InvalidInput, pruneJobs, runOnce, Snooze, type Db } from "../../src/index.js";
import { akadzeRoutes, jobEventsToken } from "../../src/edge/hono.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { deferred } from "../support/deferred.js";
import { readEvents } from "../support/event-stream.js";
import { createTestDatabase } from "../support/postgres.js";
import { sentStatement } from "../support/statements.js";

const SECRET = "progress-test-secret";

forEachDriver((h) => {
  function setup() {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const run = () => runOnce(app, { db: h().db, now: clock.now });
    return { clock, app, run };
  }

  it("a body's last progress and its log lines, each with its attempt, are kept with the job and shown by getJob", async () => {
    const { clock, app, run } = setup();
    const load = app.task("rows.load", { args: v.object({ rows: v.number() }), maxAttempts: 2, backoff: () => 1000 }, async ({ rows }, job) => {
      job.log("attempt", job.attempt, "starts", { rows });
      for (let i = 1; i <= rows; i++) job.progress({ done: i, of: rows });
      if (job.attempt === 1) throw new Error("the source hung up");
      job.log("done");
      return { loaded: rows };
    });
    const id = await load.using(h().db).enqueue({ rows: 40 });
    expect((await run()).retried).toBe(1);
    const retrying = await getJob(h().db, id);
    expect(retrying).toMatchObject({ state: "queued", progress: { done: 40, of: 40 }, logsDropped: 0 });
    expect(retrying?.logs.map((l) => [l.attempt, l.message])).toEqual([[1, 'attempt 1 starts {"rows":40}']]);
    clock.advance(1000);
    expect((await run()).succeeded).toBe(1);
    const job = await getJob(h().db, id, load);
    expect(job).toMatchObject({ state: "succeeded", result: { loaded: 40 }, progress: { done: 40, of: 40 }, logsDropped: 0 });
    expect(job?.progressAt).toBe(clock.now().toISOString());
    expect(job?.logs.map((l) => [l.attempt, l.message])).toEqual([[1, 'attempt 1 starts {"rows":40}'], [2, 'attempt 2 starts {"rows":40}'], [2, "done"]]);
    expect(job?.logs[2].at).toBe(clock.now().toISOString());
  });

  it("a body that completes with completeBatch has its reports written before the completion, and later ones ignored", async () => {
    const { app, run } = setup();
    const task = app.task("complete.early", async (_args, job) => {
      job.progress("almost");
      job.log("before the completion");
      await current().completeBatch(() => []);
      job.progress("after"); // the job has ended: not stored
      job.log("after the completion");
      return "done";
    });
    const id = await task.using(h().db).enqueue({});
    expect((await run()).succeeded).toBe(1);
    const job = await getJob(h().db, id);
    expect(job).toMatchObject({ state: "succeeded", result: "done", progress: "almost" });
    expect(job?.logs.map((l) => l.message)).toEqual(["before the completion"]);
  });

  it("a job that reports nothing has no progress row and shows none", async () => {
    const { app, run } = setup();
    const id = await app.task("quiet", async () => 1).using(h().db).enqueue({});
    await run();
    expect(await getJob(h().db, id)).toMatchObject({ progress: null, progressAt: null, logs: [], logsDropped: 0 });
    expect(await h().rows("select * from akadze.job_progress")).toEqual([]);
  });

  it("a progress value that is not JSON or over 16 KiB is an InvalidInput to the body, which goes on and reports a smaller one", async () => {
    const { app, run } = setup();
    const seen: string[] = [];
    const task = app.task("big", async (_args, job) => {
      for (const value of [{ at: new Date() }, { blob: "x".repeat(16_384) }, "é".repeat(9000)]) {
        try {
          job.progress(value);
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidInput);
          seen.push((error as Error).message);
        }
      }
      job.progress("x".repeat(16_000)); // under the cap: taken
      return "ok";
    });
    const id = await task.using(h().db).enqueue({});
    expect((await run()).succeeded).toBe(1);
    expect(seen).toEqual([
      expect.stringMatching(/^job\.progress takes a JSON value: progress\.at: a Date is not JSON/),
      expect.stringMatching(/^job\.progress takes at most 16384 bytes of JSON, and this value is 16395: report a small status/),
      expect.stringMatching(/and this value is 18002:/),
    ]);
    expect((await getJob(h().db, id))?.progress).toBe("x".repeat(16_000));
  });

  it("a job keeps 200 log lines across its attempts and counts the rest as dropped", async () => {
    const { clock, app, run } = setup();
    const chatty = app.task("chatty", { maxAttempts: 2, backoff: () => 1000 }, async (_args, job) => {
      for (let i = 1; i <= 150; i++) job.log(`line ${i} of attempt ${job.attempt}`);
      if (job.attempt === 1) throw new Error("again");
    });
    const id = await chatty.using(h().db).enqueue({});
    await run();
    clock.advance(1000);
    await run();
    const job = await getJob(h().db, id);
    expect(job?.logs.length).toBe(200);
    expect(job?.logsDropped).toBe(100);
    expect(job?.logs.at(-1)).toMatchObject({ attempt: 2, message: "line 50 of attempt 2" });
    const bytes = await h().rows(`select log_lines, log_bytes from akadze.job_progress where job_id = ${id}`);
    expect(bytes).toEqual([{ log_lines: 200, log_bytes: job!.logs.reduce((n, l) => n + l.message.length, 0) }]);
  });

  it("a job's progress and log lines are pruned with it", async () => {
    const { clock, app, run } = setup();
    const id = await app.task("reporting", async (_args, job) => { job.progress(1); job.log("hello"); }).using(h().db).enqueue({});
    await run();
    expect(await h().rows("select count(*)::int as n from akadze.job_logs")).toEqual([{ n: 1 }]);
    clock.advance(3 * 86_400_000);
    expect(await pruneJobs(h().db, { olderThan: "1d", now: clock.now() })).toEqual({ deleted: 1 });
    expect(await getJob(h().db, id)).toBeNull();
    expect(await h().rows("select (select count(*) from akadze.job_progress)::int as p, (select count(*) from akadze.job_logs)::int as l")).toEqual([{ p: 0, l: 0 }]);
    // A job that went another way (a partition dropped whole) leaves rows the history's maintenance prunes.
    await h().db.execute(sql.raw("insert into akadze.job_progress (job_id, progress, updated_at) values (987654, '1', now() - interval '2 days')"));
    expect(await h().rows("select akadze.prune_orphan_progress(now() - interval '1 day', 100) as n")).toEqual([{ n: 1 }]);
  });

  it("the event stream sends the job's progress as it changes, then its end with the result, and closes", async () => {
    const { app, run } = setup();
    const gate = deferred();
    const task = app.task("export", async (_args, job) => {
      job.progress({ phase: "reading" });
      await gate.promise;
      job.progress({ phase: "writing" });
      return { url: "https://example.com/export.csv" };
    });
    const web = new Hono().route("/akadze", akadzeRoutes(app, { db: h().db, secret: SECRET, log: "silent", events: { pollEvery: "50ms", maxPollEvery: "100ms" } }));
    const id = await task.using(h().db).enqueue({});
    const token = await jobEventsToken(SECRET, id, new Date(Date.now() + 60_000));
    const response = await web.fetch(new Request(`http://test/akadze/jobs/${id}/events?token=${token}`));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const events = readEvents(response);
    await events.until((e) => e.event === "state" && (e.data as { state: string }).state === "queued");
    const running = run();
    await events.until((e) => e.event === "progress");
    gate.resolve();
    expect((await running).succeeded).toBe(1);
    const all = await events.rest();
    const progress = all.filter((e) => e.event === "progress").map((e) => (e.data as { progress: unknown }).progress);
    expect(progress).toEqual([{ phase: "reading" }, { phase: "writing" }]);
    expect(all.at(-1)).toEqual({ event: "end", data: { state: "succeeded", result: { url: "https://example.com/export.csv" }, error: null } });
  });

  it("the event stream of a finished job ends at once; a failed job's end carries its error", async () => {
    const { app, run } = setup();
    const id = await app.task("broken", { maxAttempts: 1 }, async (_args, job) => { job.progress(3); throw new Error("disk full"); }).using(h().db).enqueue({});
    await run();
    const web = new Hono().route("/akadze", akadzeRoutes(app, { db: h().db, secret: SECRET, log: "silent" }));
    const response = await web.fetch(new Request(`http://test/akadze/jobs/${id}/events`, { headers: { authorization: `Bearer ${SECRET}` } }));
    expect(await readEvents(response).rest()).toEqual([
      { event: "state", data: { state: "failed", attempt: 1 } },
      { event: "progress", data: { progress: 3, at: expect.any(String) } },
      { event: "end", data: { state: "failed", result: null, error: "disk full" } },
    ]);
  });

  it("the event stream refuses a token for another job, an expired or forged token, and no credentials; an unknown job is a 404", async () => {
    const { app } = setup();
    const clock = new ManualClock();
    const web = new Hono().route("/akadze", akadzeRoutes(app, { db: h().db, secret: SECRET, log: "silent", events: { now: clock.now } }));
    const task = app.task("t", async () => {});
    const id = await task.using(h().db).enqueue({});
    const other = await task.using(h().db).enqueue({});
    const inAMinute = new Date(clock.now().getTime() + 60_000);
    const get = (query: string, jobId = id) => web.fetch(new Request(`http://test/akadze/jobs/${jobId}/events${query}`));
    const refused = async (query: string, jobId = id) => {
      const response = await get(query, jobId);
      return [response.status, ((await response.json()) as { error: { code: string } }).error.code];
    };
    expect(await refused(`?token=${await jobEventsToken(SECRET, other, inAMinute)}`)).toEqual([401, "unauthorized"]);
    expect(await refused(`?token=${await jobEventsToken("another-secret", id, inAMinute)}`)).toEqual([401, "unauthorized"]);
    expect(await refused(`?token=not-a-token`)).toEqual([401, "unauthorized"]);
    expect(await refused("")).toEqual([401, "unauthorized"]);
    const token = await jobEventsToken(SECRET, id, inAMinute);
    const ok = await get(`?token=${token}`);
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
    clock.advance(60_000);
    expect(await refused(`?token=${token}`)).toEqual([401, "unauthorized"]);
    expect(await refused(`?token=${await jobEventsToken(SECRET, 987654, inAMinute)}`, 987654)).toEqual([401, "unauthorized"]);
    expect(await refused(`?token=${await jobEventsToken(SECRET, 987654, new Date(clock.now().getTime() + 60_000))}`, 987654)).toEqual([404, "not_found"]);
  });

  it("a job snoozed between ticks keeps its progress, and the stream sees each tick's", async () => {
    const { clock, app, run } = setup();
    let chunk = 0;
    const task = app.task("chunks", async (_args, job) => {
      chunk++;
      job.progress({ chunk });
      if (chunk < 3) throw new Snooze("1s");
      return { chunks: chunk };
    });
    const id = await task.using(h().db).enqueue({});
    const web = new Hono().route("/akadze", akadzeRoutes(app, { db: h().db, secret: SECRET, log: "silent", events: { pollEvery: "50ms", maxPollEvery: "50ms" } }));
    const events = readEvents(await web.fetch(new Request(`http://test/akadze/jobs/${id}/events`, { headers: { authorization: `Bearer ${SECRET}` } })));
    for (const n of [1, 2, 3]) {
      await run();
      clock.advance(1000);
      if (n < 3) await events.until((e) => e.event === "progress" && (e.data as { progress: { chunk: number } | null }).progress?.chunk === n);
    }
    await events.until((e) => e.event === "end");
    expect(events.seen.at(-1)?.data).toEqual({ state: "succeeded", result: { chunks: 3 }, error: null });
  });
});

describe("what reporting costs in statements (node-postgres, every statement counted)", () => {
  /** A pool that counts what it sends: all statements, and the reports' writes among them. */
  class CountingPool extends pg.Pool {
    statements = 0;
    progressWrites = 0;
    override query(...args: any[]): any {
      const { text } = sentStatement(args);
      this.statements++;
      if (text.includes("insert into akadze.job_progress")) this.progressWrites++;
      return (super.query as any)(...args);
    }
  }
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let pool: CountingPool;
  beforeAll(async () => {
    database = await createTestDatabase("progress_cost");
    pool = new CountingPool({ connectionString: database.url, max: 4 });
  });
  afterAll(async () => { await pool?.end(); await database?.drop(); });

  it("10,000 progress calls in one body cost at most two writes, and a run that reports nothing sends the same statements as before", async () => {
    const db = drizzle(pool) as unknown as Db;
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const quiet = app.task("quiet", async () => ({ n: 10_000 }));
    const busy = app.task("busy", async (_args, job) => {
      for (let i = 1; i <= 10_000; i++) job.progress({ done: i, of: 10_000 });
      return { n: 10_000 };
    });
    const count = async (task: typeof quiet) => {
      const id = await task.using(db).enqueue({});
      pool.statements = 0;
      pool.progressWrites = 0;
      expect((await runOnce(app, { db, now: clock.now, queues: ["default"] })).succeeded).toBe(1);
      return { id, statements: pool.statements, writes: pool.progressWrites };
    };
    await count(quiet); // (the first run also checks the schema: not compared)
    const silent = await count(quiet);
    const reporting = await count(busy);
    expect(silent.writes).toBe(0);
    expect(reporting.writes).toBeGreaterThanOrEqual(1);
    expect(reporting.writes).toBeLessThanOrEqual(2);
    expect(reporting.statements).toBe(silent.statements + reporting.writes);
    expect((await getJob(db, reporting.id))?.progress).toEqual({ done: 10_000, of: 10_000 });
  });
});
