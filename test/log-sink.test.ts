// The app's log sink: every line akadze logs goes to `createApp({ log })`, none past it to the console.
import { expect, it } from "vitest";
import { Hono } from "hono";
import { consoleLog, createApp, InvalidInput, type LogRecord } from "akadze";
import { akadzeRoutes } from "akadze/hono";
import { forEachDriver } from "./support/drivers.js";
import { captureConsole } from "./support/console.js";

const SECRET = "s3cret-for-tests";

forEachDriver((h) => {
  it("a transition hook that throws in a cancel request is one error record in the app's log, with the error, and nothing on the console", async () => {
    const records: LogRecord[] = [];
    const app = createApp({ log: (record) => records.push(record) });
    app.hooks.onTransition(() => { throw new Error("the audit table is gone"); });
    const id = await app.task("t", async () => {}).using(h().db).enqueue({});
    const web = new Hono().route("/akadze", akadzeRoutes(app, { db: h().db, secret: SECRET }));
    const { result: res, calls } = await captureConsole(["error", "warn", "log"], () =>
      web.fetch(new Request(`http://test/akadze/jobs/${id}/cancel`, { method: "POST", headers: { authorization: `Bearer ${SECRET}` } })));
    expect(res.status).toBe(500);
    expect(calls).toEqual({ error: [], warn: [], log: [] });
    expect(records).toEqual([{
      level: "error", message: `POST /akadze/jobs/${id}/cancel failed:`,
      fields: { method: "POST", path: `/akadze/jobs/${id}/cancel`, error: expect.objectContaining({ message: "the audit table is gone" }) },
    }]);
  });

  it("the work route's line for a failed job is a warn record naming the job, and nothing on the console", async () => {
    const records: LogRecord[] = [];
    const app = createApp({ log: (record) => records.push(record) });
    const id = await app.task("broken", { maxAttempts: 1 }, async () => { throw new Error("vendor said no"); }).using(h().db).enqueue({});
    const routes = akadzeRoutes(app, { db: h().db, secret: SECRET });
    const { calls } = await captureConsole(["error", "warn", "log"], () =>
      routes.request("/work", { method: "POST", headers: { authorization: `Bearer ${SECRET}` } }));
    expect(calls).toEqual({ error: [], warn: [], log: [] });
    expect(records).toEqual([{
      level: "warn", message: `job ${id} (broken, queue default, attempt 1) failed: Error: vendor said no`,
      fields: { jobId: id, task: "broken", queue: "default", attempt: 1, to: "failed", errorKind: "Error" },
    }]);
  });
});

it("the default sink prints what akadze always printed: `akadze: <message>`, then the error", async () => {
  const error = new Error("boom");
  const { calls } = await captureConsole(["error", "warn", "log"], () => {
    consoleLog({ level: "error", message: "GET /akadze/metrics failed:", fields: { error } });
    consoleLog({ level: "warn", message: "a warning", fields: { tasks: ["t"] } });
    consoleLog({ level: "info", message: "invocation", fields: { summary: { claimed: 1 } } });
  });
  expect(calls).toEqual({ error: [["akadze: GET /akadze/metrics failed:", error]], warn: [["akadze: a warning"]], log: [["akadze invocation", '{"claimed":1}']] });
});

it("createApp refuses a log that is not a function", () => {
  expect(() => createApp({ log: "console" as never })).toThrow(InvalidInput);
});
