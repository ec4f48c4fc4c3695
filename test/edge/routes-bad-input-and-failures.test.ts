// What akadze's routes answer to bad input, oversized bodies and failures (issue 11, item 9), on every driver: a 400
// naming the field, a 413 that reads nothing, a 500 with a sentence but never the SQL; hooks still see the transitions.
import { expect, it } from "vitest";
import { Hono } from "hono";
import { sql } from "drizzle-orm";
import { createApp, InvalidInput, type Transition } from "akadze";
import { akadzeRoutes, DEFAULT_MAX_BODY_BYTES, INTERNAL_ERROR_MESSAGE, type AkadzeRoutesOptions } from "akadze/hono";
import { forEachDriver } from "../support/drivers.js";
import { captureConsole } from "../support/console.js";

const SECRET = "s3cret-for-tests";

/** Runs `fn` with console.error captured, so a test can check what reached the server log. */
async function withServerLog<T>(fn: () => Promise<T>): Promise<{ result: T; logged: string }> {
  const { result, calls } = await captureConsole(["error"], fn);
  return { result, logged: calls.error.flat().map((a) => (a instanceof Error ? `${a.message} ${String((a as any).cause?.message ?? "")}` : String(a))).join("\n") };
}

forEachDriver((h) => {
  function setup(options: Partial<AkadzeRoutesOptions> = {}) {
    const app = createApp();
    const ok = app.task("ok", async () => "done");
    const web = new Hono().route("/akadze", akadzeRoutes(app, { db: h().db, secret: SECRET, ...options }));
    const call = (path: string, init: RequestInit = {}) =>
      web.fetch(new Request(`http://test${path}`, { method: "POST", ...init, headers: { authorization: `Bearer ${SECRET}`, ...init.headers as object } }));
    return { app, ok, call };
  }
  const states = () => h().rows("select state, attempt from akadze.all_jobs order by id");

  it("a failure inside a route is a 500 with a code and a sentence, never the SQL or its parameters; the log has them", async () => {
    const { call } = setup({ metrics: async (db) => { await db.execute(sql`select * from akadze.no_such_table where note = ${"private-param"}`); return ""; } });
    const { result: res, logged } = await withServerLog(async () => call("/akadze/metrics", { method: "GET" }));
    expect(res.status).toBe(500);
    const text = await res.text();
    expect(JSON.parse(text)).toEqual({ error: { code: "internal_error", message: INTERNAL_ERROR_MESSAGE } });
    expect(text).not.toMatch(/select|no_such_table|private-param/i);
    expect(logged).toMatch(/no_such_table/);
  });

  it("input Postgres refuses as bad data (SQLSTATE 22xxx) is a 400 with its reason, not a 500", async () => {
    const { call } = setup({ metrics: async (db) => { await db.execute(sql`select ${"not a number"}::int`); return ""; } });
    const res = await call("/akadze/metrics", { method: "GET" });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error).toMatchObject({ code: "invalid_input", sqlstate: "22P02" });
    expect(body.error.message).toMatch(/^the database refused the input: invalid input syntax for type integer/);
    expect(JSON.stringify(body)).not.toMatch(/select/i);
  });

  it("PUT /limits/k with maxRunning 1e10 is a 400 naming the field, and writes nothing", async () => {
    const { call } = setup();
    const res = await call("/akadze/limits/k", { method: "PUT", body: JSON.stringify({ maxRunning: 1e10 }) });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe("invalid_request");
    expect(body.error.message).toMatch(/maxRunning must be at most 10000/);
    expect(await h().rows("select key from akadze.limits")).toEqual([]);
  });

  it(`a request body over maxBodyBytes (default ${DEFAULT_MAX_BODY_BYTES}) is a 413 and runs nothing`, async () => {
    const { ok, call } = setup();
    await ok.using(h().db).enqueue({});
    const huge = JSON.stringify({ queues: ["default"], padding: "x".repeat(DEFAULT_MAX_BODY_BYTES) });
    const res = await call("/akadze/work", { body: huge });
    expect(res.status).toBe(413);
    expect((await res.json()).error).toMatchObject({ code: "payload_too_large" });
    // A chunked body (no Content-Length) is counted as it streams.
    const stream = new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(huge)); c.close(); } });
    const chunked = await call("/akadze/work", { body: stream, duplex: "half" } as RequestInit);
    expect(chunked.status).toBe(413);
    expect(await states()).toEqual([{ state: "queued", attempt: 0 }]);

    const small = setup({ maxBodyBytes: 64 });
    expect((await small.call("/akadze/limits/k", { method: "PUT", body: JSON.stringify({ maxRunning: 1, note: "y".repeat(64) }) })).status).toBe(413);
    expect((await small.call("/akadze/work", { body: JSON.stringify({ slots: 1 }) })).status).toBe(200);
    expect(await states()).toEqual([{ state: "succeeded", attempt: 1 }]);
  });

  it("a body over the cap from a caller without the secret is a 401: it is not read", async () => {
    const { call } = setup({ maxBodyBytes: 16 });
    const res = await call("/akadze/work", { body: "z".repeat(64), headers: { authorization: "Bearer wrong" } });
    expect(res.status).toBe(401);
  });

  it("a job id above 2^53 - 1 in a path is a 400, never rounded to another job", async () => {
    const { ok, call } = setup();
    await ok.using(h().db).enqueue({});
    for (const id of ["9007199254740993", "9223372036854775808", "99999999999999999999"]) {
      const res = await call(`/akadze/jobs/${id}/cancel`);
      expect(res.status).toBe(400);
      expect((await res.json()).error.message).toMatch(/job id/);
    }
    expect((await call("/akadze/jobs/9007199254740991/cancel")).status).toBe(404);
    expect(await states()).toEqual([{ state: "queued", attempt: 0 }]);
  });

  it("a queue name with a NUL byte in a work request is a 400", async () => {
    const { call } = setup();
    const res = await call("/akadze/work", { body: JSON.stringify({ queues: ["a\u0000b"] }) });
    expect(res.status).toBe(400);
    expect((await res.json()).error.message).toMatch(/NUL byte/);
  });

  it("cancel and requeue through the routes report their transitions to the app's hooks", async () => {
    const { app, ok, call } = setup();
    const seen: string[] = [];
    app.hooks.onTransition((t: Transition) => { seen.push(`${t.jobId}: ${t.from} -> ${t.to}`); });
    const id = await ok.using(h().db).enqueue({});
    expect((await call(`/akadze/jobs/${id}/cancel`)).status).toBe(200);
    expect(seen).toEqual([`${id}: queued -> cancelled`]);
  });

  it("bad akadzeRoutes options are InvalidInput naming the field", () => {
    const app = createApp();
    const bad: [Partial<AkadzeRoutesOptions>, RegExp][] = [
      [{ getDb: () => h().db }, /exactly one of db and getDb/],
      [{ secret: undefined }, /secret or getSecret/],
      [{ maxBodyBytes: 0 }, /maxBodyBytes must be at least 1/],
      [{ budget: "soon" as never }, /budget/],
      [{ run: { lease: "0ms" } }, /run\.lease: lease must be at least 1000 ms/],
      [{ budget: "30s", maxBudget: "10s" }, /budget must not exceed maxBudget/],
    ];
    for (const [options, message] of bad) {
      let error: unknown;
      try { akadzeRoutes(app, { db: h().db, secret: SECRET, ...options }); } catch (e) { error = e; }
      expect(error).toBeInstanceOf(InvalidInput);
      expect((error as Error).message).toMatch(message);
    }
  });
});
