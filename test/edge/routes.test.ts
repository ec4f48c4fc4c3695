// akadze's Hono routes over real Requests and real Postgres: the bearer secret guards every route, /work runs an
// invocation with the options its body or query gives, and /metrics, the job and bulk actions and the admin API answer
// JSON with the right status.
import { describe, expect, it } from "vitest";
import { Hono } from "hono";
import { createApp, Fail, runOnce, type App, type Duration } from "akadze";
import { akadzeRoutes, INTERNAL_ERROR_MESSAGE } from "akadze/hono";
import { secretMatches, bearerToken } from "../../src/edge/auth.js";
import { forEachDriver } from "../support/drivers.js";
import { captureConsole } from "../support/console.js";

const SECRET = "s3cret-for-tests";
const auth = { authorization: `Bearer ${SECRET}` };

describe("the bearer secret", () => {
  it("matches only the exact secret", async () => {
    expect(await secretMatches("abc", "abc")).toBe(true);
    for (const wrong of ["abd", "ab", "abcd", "", "ABC"]) expect(await secretMatches(wrong, "abc")).toBe(false);
    expect(await secretMatches(undefined, "abc")).toBe(false);
  });

  it("is read from an Authorization: Bearer header only", () => {
    expect(bearerToken("Bearer abc")).toBe("abc");
    expect(bearerToken("bearer abc")).toBe("abc");
    expect(bearerToken("Basic abc")).toBeUndefined();
    expect(bearerToken("Bearer")).toBeUndefined();
    expect(bearerToken(null)).toBeUndefined();
  });
});

forEachDriver((h) => {
  function setup(options: { maxBudget?: Duration; secret?: string } = {}) {
    const app = createApp();
    const ok = app.task("ok", async () => "done");
    const other = app.task("other", { queue: "other" }, async () => "done");
    const broken = app.task("broken", async () => { throw new Fail("no"); });
    const web = new Hono().route("/akadze", akadzeRoutes(app, { db: h().db, secret: options.secret ?? SECRET, maxBudget: options.maxBudget }));
    const call = (path: string, init: RequestInit = {}) =>
      web.fetch(new Request(`http://test${path}`, { method: "POST", ...init, headers: { ...auth, ...init.headers as object } }));
    return { app, ok, other, broken, call };
  }
  const jobState = async (id: number) => (await h().rows(`select state, attempt from akadze.all_jobs where id = ${id}`))[0];

  it("a request without the secret is refused with 401 and changes nothing", async () => {
    const { ok, call } = setup();
    const id = await ok.using(h().db).enqueue({});
    for (const headers of [{ authorization: "" }, { authorization: "Bearer wrong" }, { authorization: `Basic ${SECRET}` }]) {
      const res = await call("/akadze/work", { headers });
      expect(res.status).toBe(401);
      expect((await res.json()).error.code).toBe("unauthorized");
    }
    expect(await jobState(id)).toEqual({ state: "queued", attempt: 0 });
  });

  it("routes with no secret configured refuse every request", async () => {
    const { call } = setup({ secret: "" });
    const res = await call("/akadze/work");
    expect(res.status).toBe(500);
    expect((await res.json()).error.code).toBe("no_secret");
  });

  it("POST /work runs one invocation and answers with its summary", async () => {
    const { ok, call } = setup();
    const [a, b] = await ok.using(h().db).enqueueMany([{}, {}]);
    const res = await call("/akadze/work");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ claimed: 2, succeeded: 2, failed: 0, released: 0 });
    expect(await jobState(a)).toMatchObject({ state: "succeeded" });
    expect(await jobState(b)).toMatchObject({ state: "succeeded" });
  });

  it("a JSON body chooses the queues and the batch size", async () => {
    const { ok, other, call } = setup();
    await ok.using(h().db).enqueueMany([{}, {}]);
    const [first] = await other.using(h().db).enqueueMany([{}, {}]);
    const res = await call("/akadze/work", { body: JSON.stringify({ queues: ["other"], batchSize: 1, slots: 1, budget: "5s", drain: false }) });
    expect(await res.json()).toMatchObject({ claimed: 1, succeeded: 1 });
    expect(await jobState(first)).toMatchObject({ state: "succeeded" });
    expect(await h().rows(`select task from akadze.all_jobs where state = 'queued' order by id`)).toEqual([{ task: "ok" }, { task: "ok" }, { task: "other" }]);
  });

  it("GET /work takes the same options from the query string, as Vercel Cron calls it", async () => {
    const { ok, other, call } = setup();
    await ok.using(h().db).enqueue({});
    await other.using(h().db).enqueue({});
    const res = await call("/akadze/work?queues=default,nothing&batchSize=5&budget=5000", { method: "GET" });
    expect(await res.json()).toMatchObject({ claimed: 1, succeeded: 1 });
  });

  it("a malformed work request is a 400 naming each bad field, and runs nothing", async () => {
    const { ok, call } = setup({ maxBudget: "30s" });
    const id = await ok.using(h().db).enqueue({});
    const bad = await call("/akadze/work?slots=0&batchSize=many", { body: JSON.stringify({ budget: "soon", queue: "typo" }) });
    expect(bad.status).toBe(400);
    const body = await bad.json();
    expect(body.error.code).toBe("invalid_request");
    expect(body.error.issues.map((i: any) => i.path).sort()).toEqual(["batchSize", "budget", "queue", "slots"]);
    const notJson = await call("/akadze/work", { body: "{oops" });
    expect(notJson.status).toBe(400);
    expect((await notJson.json()).error.code).toBe("malformed_json");
    const tooLong = await call("/akadze/work", { body: JSON.stringify({ budget: "31s" }) });
    expect(tooLong.status).toBe(400);
    expect((await tooLong.json()).error.issues).toEqual([{ path: "budget", message: "at most 30000 ms is allowed here" }]);
    expect(await jobState(id)).toEqual({ state: "queued", attempt: 0 });
  });

  it("GET /metrics counts jobs by queue and state in Prometheus text", async () => {
    const { app, ok, other, broken, call } = setup();
    await ok.using(h().db).enqueueMany([{}, {}]);
    await broken.using(h().db).enqueue({});
    await runOnce(app, { db: h().db, queues: ["default"] });
    await other.using(h().db).enqueue({});
    const res = await call("/akadze/metrics", { method: "GET" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const lines = (await res.text()).split("\n");
    // The same text as `akadze metrics` (renderMetrics).
    expect(lines).toContain("# TYPE akadze_jobs gauge");
    expect(lines).toContain('akadze_jobs{queue="default",task="ok",state="succeeded"} 2');
    expect(lines).toContain('akadze_jobs{queue="default",task="broken",state="failed"} 1');
    expect(lines).toContain('akadze_jobs{queue="other",task="other",state="queued"} 1');
    expect(lines).toContain('akadze_queue_running_jobs{queue="default"} 0');
  });

  it("POST /jobs/:id/cancel cancels a queued job; 404 for an unknown job, 409 for a finished one, 400 for a bad id", async () => {
    const { app, ok, call } = setup();
    const queued = await ok.using(h().db).enqueue({});
    const res = await call(`/akadze/jobs/${queued}/cancel`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: queued, cancelRequested: true });
    expect(await jobState(queued)).toMatchObject({ state: "cancelled" });

    const done = await ok.using(h().db).enqueue({});
    await runOnce(app, { db: h().db });
    const conflict = await call(`/akadze/jobs/${done}/cancel`);
    expect(conflict.status).toBe(409);
    expect((await conflict.json()).error).toMatchObject({ code: "conflict", state: "succeeded" });

    const missing = await call("/akadze/jobs/999999/cancel");
    expect(missing.status).toBe(404);
    expect((await missing.json()).error.code).toBe("not_found");

    const bad = await call("/akadze/jobs/abc/cancel");
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.code).toBe("invalid_request");
  });

  it("POST /jobs/:id/requeue puts a failed job back in the queue and refuses an active one", async () => {
    const { app, broken, call } = setup();
    const id = await broken.using(h().db).enqueue({});
    const early = await call(`/akadze/jobs/${id}/requeue`);
    expect(early.status).toBe(409);
    expect((await early.json()).error.state).toBe("queued");
    await runOnce(app, { db: h().db });
    expect(await jobState(id)).toMatchObject({ state: "failed", attempt: 1 });
    const res = await call(`/akadze/jobs/${id}/requeue`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id, state: "queued" });
    expect(await jobState(id)).toMatchObject({ state: "queued", attempt: 1 });
    expect((await call("/akadze/jobs/424242/requeue")).status).toBe(404);
  });

  it("POST /jobs/cancel|requeue|replay act on a selection, count with dryRun, and refuse a bad selection with 400", async () => {
    const { app, ok, broken, call } = setup();
    const post = async (path: string, body: unknown) => {
      const res = await call(path, { body: JSON.stringify(body), headers: { "content-type": "application/json" } });
      return { status: res.status, body: await res.json() };
    };
    const failed = await broken.using(h().db).enqueue({});
    await runOnce(app, { db: h().db });
    const [queued] = await ok.using(h().db, { delay: "1h" }).enqueueMany([{}, {}]);
    expect(await post("/akadze/jobs/cancel", { task: "ok", limit: 1, dryRun: true })).toEqual({ status: 200, body: { count: 1, dryRun: true } });
    expect(await jobState(queued)).toMatchObject({ state: "queued" });
    expect(await post("/akadze/jobs/cancel", { task: "ok", limit: 1 })).toEqual({ status: 200, body: { count: 1, dryRun: false } });
    expect(await jobState(queued)).toMatchObject({ state: "cancelled" });
    expect(await post("/akadze/jobs/replay", { state: ["failed", "cancelled"], dryRun: true })).toEqual({ status: 200, body: { count: 2, dryRun: true } });
    expect(await post("/akadze/jobs/requeue", { task: "broken" })).toEqual({ status: 200, body: { count: 1, dryRun: false } });
    expect(await jobState(failed)).toMatchObject({ state: "queued" });
    const before = await h().rows("select id, state from akadze.all_jobs order by id");
    for (const body of [{}, { state: "failed" }, { task: "ok", colour: "red" }, { task: "ok", dryRun: "yes" }, { task: "ok", limit: 0 }]) {
      const res = await post("/akadze/jobs/cancel", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe("invalid_request");
    }
    expect(await h().rows("select id, state from akadze.all_jobs order by id")).toEqual(before);
  });

  it("POST /jobs/:id/replay enqueues a finished job again with new args; 404 for an unknown job, 409 for an active one", async () => {
    const { app, ok, call } = setup();
    const done = await ok.using(h().db).enqueue({});
    await runOnce(app, { db: h().db });
    const res = await call(`/akadze/jobs/${done}/replay`, { body: JSON.stringify({ args: {} }) });
    expect(res.status).toBe(200);
    const { replayedAs } = await res.json();
    expect(await h().rows(`select replay_of from akadze.replays where job_id = ${replayedAs}`)).toEqual([{ replay_of: done }]);
    const active = await call(`/akadze/jobs/${replayedAs}/replay`);
    expect(active.status).toBe(409);
    expect((await active.json()).error).toMatchObject({ code: "conflict", state: "queued" });
    expect((await call("/akadze/jobs/999999/replay")).status).toBe(404);
    expect((await call(`/akadze/jobs/${done}/replay`, { body: JSON.stringify({ args: { extra: 1 }, colour: "red" }) })).status).toBe(400);
  });

  it("an unknown path or method under the routes is a JSON 404", async () => {
    const { call } = setup();
    for (const [path, method] of [["/akadze/nothing", "GET"], ["/akadze/jobs/1/cancel", "GET"]]) {
      const res = await call(path, { method });
      expect(res.status).toBe(404);
      expect((await res.json()).error.code).toBe("not_found");
    }
  });

  it("an error inside a route is a JSON 500, not an HTML page; its detail goes to the server log only", async () => {
    const app: App = createApp();
    const web = new Hono().route("/akadze", akadzeRoutes(app, { getDb: () => { throw new Error("database is down"); }, secret: SECRET }));
    const { result: res, calls } = await captureConsole(["error"], () => web.fetch(new Request("http://test/akadze/work", { method: "POST", headers: auth })));
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: { code: "internal_error", message: INTERNAL_ERROR_MESSAGE } });
    const logged = calls.error;
    expect(logged.flat().some((a) => a instanceof Error && a.message === "database is down")).toBe(true);
  });

  it("the admin API lists and shows jobs, and answers 404 for an unknown one and 400 for a bad filter", async () => {
    const { app, ok, broken, call } = setup();
    const id = await ok.using(h().db).enqueue({});
    await broken.using(h().db).enqueue({});
    await runOnce(app, { db: h().db, queues: ["default"] });
    const get = (path: string) => call(path, { method: "GET" });
    const failed = await get("/akadze/jobs?status=failed");
    expect(failed.status).toBe(200);
    expect((await failed.json()).map((j: any) => j.task)).toEqual(["broken"]);
    const shown = await (await get(`/akadze/jobs/${id}`)).json();
    expect(shown).toMatchObject({ id, task: "ok", state: "succeeded", result: "done" });
    expect((await get("/akadze/jobs/999999")).status).toBe(404);
    expect((await get("/akadze/jobs?status=lost")).status).toBe(400);
    expect((await get("/akadze/jobs?colour=red")).status).toBe(400);
  });

  it("the admin API pauses and resumes a queue for every invocation", async () => {
    const { app, other, call } = setup();
    const id = await other.using(h().db).enqueue({});
    expect(await (await call("/akadze/queues/other/pause")).json()).toEqual({ queue: "other", paused: true });
    expect((await runOnce(app, { db: h().db })).claimed).toBe(0);
    const queues = await (await call("/akadze/queues", { method: "GET" })).json();
    expect(queues.find((q: any) => q.queue === "other")).toMatchObject({ paused: true });
    await call("/akadze/queues/other/resume");
    await runOnce(app, { db: h().db });
    expect(await jobState(id)).toEqual({ state: "succeeded", attempt: 1 });
  });

  it("the admin API sets, lists and deletes limits; bad limits are a 400 and write nothing", async () => {
    const { call } = setup();
    const put = (body: unknown) => call("/akadze/limits/vendor", { method: "PUT", body: JSON.stringify(body) });
    const bad = await put({ maxRunning: 0 });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.issues).toEqual([{ path: "maxRunning", message: "maxRunning must be at least 1" }]);
    expect(await (await call("/akadze/limits", { method: "GET" })).json()).toEqual([]);
    const set = await put({ maxStarts: 10, window: "1m" });
    expect(set.status).toBe(200);
    expect(await set.json()).toMatchObject({ key: "vendor", maxStarts: 10, windowMs: 60_000 });
    expect((await (await call("/akadze/limits", { method: "GET" })).json()).map((l: any) => l.key)).toEqual(["vendor"]);
    expect((await call("/akadze/limits/vendor", { method: "DELETE" })).status).toBe(200);
    expect((await call("/akadze/limits/vendor", { method: "DELETE" })).status).toBe(404);
  });

  it("the admin API lists workers and schedules", async () => {
    const { app, ok, call } = setup();
    await ok.using(h().db).enqueue({});
    const summary = await runOnce(app, { db: h().db });
    const workers = await (await call("/akadze/workers", { method: "GET" })).json();
    expect(workers.map((w: any) => w.id)).toContain(summary.id);
    expect((await call("/akadze/workers?since=soon", { method: "GET" })).status).toBe(400);
    expect(await (await call("/akadze/schedules", { method: "GET" })).json()).toEqual([]);
  });

  it("the admin API creates, changes, pauses, resumes, lists per tenant and deletes runtime schedules", async () => {
    const { call } = setup();
    const send = (path: string, method: string, body?: unknown) => call(path, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    const created = await send("/akadze/schedules", "POST", { name: "t1.ok", tenant: "t1", task: "ok", every: "1h" });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ name: "t1.ok", tenant: "t1", everyMs: 3_600_000, catchUp: "latest", overlap: "allow", paused: false });
    expect((await send("/akadze/schedules", "POST", { name: "t1.ok", task: "ok", every: "1h" })).status).toBe(409);
    const bad = await send("/akadze/schedules", "POST", { name: "x", task: "nope", every: "1h" });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error.message).toMatch(/task "nope", which is not registered/);
    expect(await (await send("/akadze/schedules/t1.ok", "PATCH", { catchUp: { all: 3 } })).json()).toMatchObject({ catchUp: { all: 3 } });
    expect(await (await send("/akadze/schedules/t1.ok/pause", "POST")).json()).toEqual({ name: "t1.ok", paused: true });
    expect((await (await send("/akadze/schedules?tenant=t1", "GET")).json()).map((s: any) => [s.name, s.paused])).toEqual([["t1.ok", true]]);
    expect(await (await send("/akadze/schedules?tenant=t2", "GET")).json()).toEqual([]);
    expect((await send("/akadze/schedules/t1.ok/resume", "POST")).status).toBe(200);
    expect((await send("/akadze/schedules/t1.ok", "DELETE")).status).toBe(200);
    for (const [path, method] of [["/akadze/schedules/t1.ok", "DELETE"], ["/akadze/schedules/t1.ok/pause", "POST"], ["/akadze/schedules/t1.ok", "PATCH"]]) {
      expect((await send(path, method, method === "PATCH" ? { every: "5m" } : undefined)).status, `${method} ${path}`).toBe(404);
    }
  });
}, ["node-postgres", "neon-http"]);
