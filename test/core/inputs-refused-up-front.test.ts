// Inputs refused up front with a clear error that changes nothing (issue 21, items 9 and 10): a heartbeat not shorter
// than the lease, a clock with no valid Date, a cron that never fires, 10 MB of args over neon-http (the HTTP 413), a
// secret no bearer header can carry; and the dashboard's sign-in reads no large body before it answers.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hono } from "hono";
import * as v from "valibot";
import { createApp, InvalidInput, runOnce, sendEvent } from "../../src/index.js";
import { akadzeRoutes } from "../../src/edge/hono.js";
import { akadzeDashboard } from "../../src/edge/dashboard/index.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { openDriver, type Harness } from "../support/drivers.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("inputs_three"); });
afterAll(async () => { await t?.close(); });

describe("runOnce options", () => {
  it("a heartbeat not shorter than the lease is InvalidInput", async () => {
    const app = createApp();
    await expect(runOnce(app, { db: t.db, lease: "2s", heartbeat: "5s" })).rejects.toThrow(/heartbeat \(5000 ms\) must be shorter than the lease/);
    await expect(runOnce(app, { db: t.db, lease: "2s", heartbeat: "5s" })).rejects.toBeInstanceOf(InvalidInput);
  });

  it("a clock returning an invalid Date or a string is InvalidInput", async () => {
    const app = createApp();
    await expect(runOnce(app, { db: t.db, now: () => new Date(NaN) })).rejects.toThrow(/must return a valid Date, got an invalid Date/);
    await expect(runOnce(app, { db: t.db, now: (() => "2026-01-01") as unknown as () => Date })).rejects.toBeInstanceOf(InvalidInput);
  });

  it("a clock in a year Postgres cannot take as text (20000) is InvalidInput naming the clock, and changes nothing", async () => {
    const app = createApp();
    await app.task("noop", async () => {}).using(t.db).enqueue({});
    const far = new Date(Date.UTC(20000, 0, 1));
    for (const run of [() => runOnce(app, { db: t.db, now: () => far }), () => runOnce(createApp({ clock: () => far }), { db: t.db })]) {
      const error = await run().then(() => null, (e: Error) => e);
      expect(error).toBeInstanceOf(InvalidInput);
      expect(error!.message).toMatch(/runOnce: the clock \(`now`\) must return a date between 1970-01-01 and 9999-12-31 \(UTC\), got \+020000-01-01/);
    }
    expect(await t.rows("select state, attempt from akadze.all_jobs where task = 'noop'")).toEqual([{ state: "queued", attempt: 0 }]);
    await expect(sendEvent(t.db, "go", {}, { now: far })).rejects.toThrow(/sendEvent: now must be a valid Date between 1970-01-01 and 9999-12-31 \(UTC\)/);
    const debounced = createApp({ clock: () => far }).debounced("later", { window: "1s" }, async () => {});
    await expect(debounced.using(t.db, { key: "k" }).enqueue({})).rejects.toThrow(/debounced task later: the app's clock must return a date between 1970-01-01 and 9999-12-31 \(UTC\), got \+020000-01-01/);
    expect(await t.rows("select count(*)::int as n from akadze.all_jobs where task = 'later'")).toEqual([{ n: 0 }]);
  });
});

describe("schedules", () => {
  it("a cron expression that never fires is InvalidInput", () => {
    const app = createApp();
    expect(() => app.periodic("never", { cron: "0 0 31 2 *" }, async () => {})).toThrow(/never fires/);
    expect(() => app.periodic("never", { cron: "0 0 31 2 *" }, async () => {})).toThrow(InvalidInput);
  });
});

describe("over neon-http", () => {
  let h: Harness;
  beforeAll(async () => { h = await openDriver("neon-http"); });
  afterAll(async () => { await h?.close(); });

  it("10 MB of args fail with a short message naming the HTTP 413", async () => {
    const app = createApp();
    const task = app.task("big", { args: v.object({ blob: v.string() }) }, async () => {});
    const error = await task.using(h.db).enqueue({ blob: "x".repeat(10 * 1024 * 1024) }).then(() => null, (e: Error) => e);
    expect(error).not.toBeNull();
    expect(error!.message.length).toBeLessThan(5_000);
    expect(error!.message).toMatch(/413/);
  }, 60_000);
});

describe("secrets and the dashboard", () => {
  it("a secret with whitespace is refused for the bearer check and the sign-in alike", async () => {
    const app = createApp();
    const web = new Hono().route("/akadze", akadzeRoutes(app, { db: t.db, secret: "two words", dashboard: akadzeDashboard() }));
    const bearer = await web.fetch(new Request("http://127.0.0.1/akadze/queues", { headers: { authorization: "Bearer two" } }));
    expect(bearer.status).toBe(500);
    expect(await bearer.json()).toMatchObject({ error: { code: "bad_secret" } });
    const login = await web.fetch(new Request("http://127.0.0.1/akadze/ui/login", {
      method: "POST", body: new URLSearchParams({ secret: "two words" }).toString(), headers: { "content-type": "application/x-www-form-urlencoded" },
    }));
    expect(login.status).toBe(500);
    expect(login.headers.get("set-cookie")).toBeNull();
  });

  it("the sign-in page refuses a large body with 413 instead of reading it", async () => {
    const app = createApp();
    const web = new Hono().route("/akadze", akadzeRoutes(app, { db: t.db, secret: "s3cret", dashboard: akadzeDashboard() }));
    const body = `secret=${"x".repeat(2 * 1024 * 1024)}`;
    const res = await web.fetch(new Request("http://127.0.0.1/akadze/ui/login", {
      method: "POST", body, headers: { "content-type": "application/x-www-form-urlencoded", "content-length": String(body.length) },
    }));
    expect(res.status).toBe(413);
  });
});
