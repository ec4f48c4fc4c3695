/**
 * akadze's HTTP surface as a Hono sub-app: run an invocation, read metrics, cancel and requeue jobs.
 * It only touches Web `Request`/`Response`, so the same routes run on Workers, Vercel, Node and Bun.
 *
 * @example
 * import { Hono } from "hono";
 * import { akadzeRoutes } from "akadze/hono";
 * const web = new Hono<{ Bindings: { DATABASE_URL: string; CRON_SECRET: string } }>();
 * web.route("/akadze", akadzeRoutes(app, { getDb: (c) => dbFor(c.env), getSecret: (c) => c.env.CRON_SECRET }));
 */
import { Hono, type Context, type Env } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { App } from "../app/app.js";
import { parseDuration, type Duration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { parseOrThrow, RoutesOptionsSchema } from "../core/validate.js";
import type { Db } from "../db/query.js";
import { DEFAULT_BUDGET, runOnce, type RunOnceOptions } from "../runtime/run-once.js";
import { invocationLogLines, reportToDev, warnTasksOverBudget, writeLogLines, type LogLevel } from "../ops/invocation-log.js";
import { bearerToken, secretMatches, secretProblem } from "./auth.js";
import { renderMetrics as renderAllMetrics } from "../ops/metrics.js";
import { parseRequest, problemOf, RouteProblem } from "./problems.js";
import { JobIdParam, jsonBody, queryObject, WorkRequest } from "./requests.js";
import { registerAdminRoutes } from "./admin.js";
import { controlJob } from "./job-control.js";
import { registerBulkRoutes } from "./bulk-routes.js";
import type { Dashboard } from "./dashboard/index.js";
import type { FanOutOptions } from "../runtime/fan-out.js";
import { registerJobEventsRoute, type JobEventsOptions } from "./job-events.js";

/** Where `akadzeRoutes` gets its database, secret and limits. */
export interface AkadzeRoutesOptions<E extends Env = Env> {
  /** The database, or `getDb` to build one per request (e.g. from Worker bindings). */
  db?: Db;
  getDb?: (c: Context<E>) => Db | Promise<Db>;
  /** The bearer secret every request must carry, or `getSecret` to read it per request. */
  secret?: string;
  getSecret?: (c: Context<E>) => string | undefined;
  /** Budget of `POST /work` when the request names none. Default "25s". */
  budget?: Duration;
  /** The most a request may ask for; keep it inside the platform's time limit. Default: `budget`. */
  maxBudget?: Duration;
  /** Other `runOnce` options applied to every `/work` call (lease, heartbeat, id). */
  run?: Omit<RunOnceOptions, "db" | "queues" | "slots" | "batchSize" | "budget">;
  /** Renders `GET /metrics`. Default: the same text as `akadze metrics` (`renderMetrics`). */
  metrics?: (db: Db) => Promise<string>;
  /**
   * The web dashboard under `/ui`: pass `akadzeDashboard()` from "akadze/dashboard". Its pages sign in with
   * `secret` and use a session cookie instead of the bearer header. Left out, none of it is bundled.
   */
  dashboard?: Dashboard;
  /** Request bodies larger than this many bytes are refused with 413 before they are read. Default `DEFAULT_MAX_BODY_BYTES` (1 MiB). */
  maxBodyBytes?: number;
  /**
   * What `POST /work` writes to the app's log (`createApp({ log })`): "warn" (default) one line per failed or
   * retried job, "info" also a line per busy invocation, or "silent".
   */
  log?: LogLevel;
  /**
   * Fan-out for `/work`: how this request's invocation starts siblings (`ownUrl`, `selfBinding` or your own
   * `invoke`) and `maxInvocations`. Given, every `/work` call fans out (a cron's call is the tick), and the
   * siblings' requests are accepted; left out, a request carrying a `fanOut` ticket is refused with 400.
   */
  fanOut?: (c: Context<E>) => FanOutOptions | undefined;
  /** How `GET /jobs/:id/events` (a job's progress and end as server-sent events) polls and how long a stream lasts. */
  events?: JobEventsOptions;
}

/** The largest request body the routes read unless told otherwise: 1 MiB, far above any admin or work request. */
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;

/**
 * The routes, each behind `Authorization: Bearer <secret>` (Vercel Cron's `CRON_SECRET` header as is):
 * - `POST /work` (and `GET /work`, which Vercel Cron sends): one `runOnce`; `queues`, `slots`,
 *   `batchSize`, `budget` from the query or a JSON body; answers with the invocation's summary.
 * - `GET /metrics`: Prometheus text.
 * - `POST /jobs/:id/cancel`, `POST /jobs/:id/requeue`, `POST /jobs/:id/replay`, and by a selection
 *   `POST /jobs/cancel|requeue|replay` (see `registerBulkRoutes`).
 * - the admin API of `registerAdminRoutes`: jobs, queues (pause/resume), limits, workers, schedules.
 * - `GET /jobs/:id/events`: the job's progress and end as server-sent events, for a page's EventSource; it also
 *   lets in a `?token=` minted by `jobEventsToken` for that job (see `registerJobEventsRoute`).
 * - with `dashboard`, its pages under `/ui` (signed in with the same secret, see `akadzeDashboard`).
 * Errors are JSON `{ error: { code, message, issues? } }`: 400 malformed (or refused by Postgres as bad
 * data), 401 no or wrong secret, 404 unknown job, 409 job in the wrong state, 413 body over
 * `maxBodyBytes`; an unexpected 500 says only that the server log has the details (the app's log, `createApp({ log })`: the console unless told).
 * @example web.route("/akadze", akadzeRoutes(app, { db, secret: process.env.CRON_SECRET }));
 */
export function akadzeRoutes<E extends Env = Env>(app: App, options: AkadzeRoutesOptions<E>): Hono<E> {
  parseOrThrow(RoutesOptionsSchema, options, "akadzeRoutes options");
  const budgetMs = parseDuration(options.budget ?? DEFAULT_BUDGET, "budget");
  const maxBudgetMs = options.maxBudget === undefined ? budgetMs : parseDuration(options.maxBudget, "maxBudget");
  if (budgetMs > maxBudgetMs) throw new InvalidInput("Invalid akadzeRoutes options: budget must not exceed maxBudget");
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const getDb = options.getDb ?? (() => options.db!);
  const renderMetrics = options.metrics ?? ((db: Db) => renderAllMetrics(db, { knownTasks: [...app.tasks.keys()] }));
  const log = options.log ?? "warn";
  // A task that can never fit this route's budget is said now, not discovered from jobs that never run.
  if (log !== "silent") warnTasksOverBudget(app, options.maxBudget ?? options.budget ?? DEFAULT_BUDGET, "the /work route");

  const getSecret = (c: Context<E>) => (options.getSecret ? options.getSecret(c) : options.secret);

  const routes = new Hono<E>();
  // Before the bearer check: the dashboard's pages authenticate a browser by its session cookie instead.
  options.dashboard?.(routes, { app, getDb, getSecret });
  // Before the bearer check too: a page's EventSource sends no header, so it may come with a per-job token instead.
  registerJobEventsRoute(routes, getDb, getSecret, options.events, app.log);
  routes.onError((error, c) => {
    const { status, body } = problemOf(error);
    // The client gets a code and a sentence; the detail (SQL, parameters, stack) goes to the server log only.
    if (status >= 500) {
      const path = new URL(c.req.url).pathname;
      app.log({ level: "error", message: `${c.req.method} ${path} failed:`, fields: { method: c.req.method, path, error } });
    }
    return c.json(body, status as 400);
  });
  routes.use("*", async (c, next) => {
    const secret = getSecret(c);
    if (!secret) throw new RouteProblem(500, "no_secret", "akadze routes have no secret configured; set one (e.g. CRON_SECRET) so requests can be authorised");
    const problem = secretProblem(secret);
    if (problem) throw new RouteProblem(500, "bad_secret", problem);
    const token = bearerToken(c.req.header("authorization"));
    if (token === undefined) throw new RouteProblem(401, "unauthorized", "missing Authorization: Bearer <secret> header");
    if (!(await secretMatches(token, secret))) throw new RouteProblem(401, "unauthorized", "wrong secret");
    await next();
  });
  // After the secret: a stranger's oversized body is refused as unauthorised without being read.
  routes.use("*", bodyLimit({
    maxSize: maxBodyBytes,
    onError: () => { throw new RouteProblem(413, "payload_too_large", `the request body is larger than ${maxBodyBytes} bytes`); },
  }));

  const work = async (c: Context<E>) => {
    const request = parseRequest(WorkRequest, { ...queryObject(new URL(c.req.url)), ...(await jsonBody(c)) }, "work request");
    const budget = request.budget ?? budgetMs;
    if (budget > maxBudgetMs) {
      throw new RouteProblem(400, "invalid_request", `Invalid work request: budget: at most ${maxBudgetMs} ms is allowed here`,
        { issues: [{ path: "budget", message: `at most ${maxBudgetMs} ms is allowed here` }] });
    }
    const ticket = request.fanOut;
    const fanOut = options.fanOut?.(c);
    if (ticket && !fanOut) throw new RouteProblem(400, "invalid_request", "this work route does not fan out (akadzeRoutes has no fanOut option), so it takes no fanOut ticket");
    const waitUntil = waitUntilOf(c);
    const invocation = async () => runOnce(app, {
      ...options.run, db: await getDb(c), queues: request.queues, slots: request.slots, batchSize: request.batchSize, budget,
      ...(request.drain === undefined ? {} : { drain: request.drain }),
      ...(ticket ? { id: ticket.id } : {}),
      ...(fanOut ? { fanOut: { ...(waitUntil ? { waitUntil } : {}), ...fanOut, ...(ticket ? { ticket: { chain: ticket.chain, generation: ticket.generation, ...(ticket.trace ? { trace: ticket.trace } : {}) } } : {}) } } : {}),
    });
    if (ticket && request.detach) {
      // The starter does not wait for this invocation: it runs on after the 202 (waitUntil where the platform has one).
      const running = invocation().then((summary) => {
        const lines = invocationLogLines(summary, "fan-out invocation");
        writeLogLines(lines, log, app.log);
        reportToDev(lines, log);
      },
        (error: unknown) => { app.log({ level: "error", message: `fan-out invocation ${ticket.id} failed`, fields: { invocation: ticket.id, error } }); });
      waitUntil?.(running);
      return c.json({ accepted: true, id: ticket.id }, 202);
    }
    const summary = await invocation();
    const lines = invocationLogLines(summary, ticket ? "fan-out invocation" : "work route");
    writeLogLines(lines, log, app.log);
    if (ticket) reportToDev(lines, log); // (the dev server's own tick prints its summary itself)
    return c.json(summary);
  };
  routes.post("/work", work);
  routes.get("/work", work);

  routes.get("/metrics", async (c) => {
    const text = await renderMetrics(await getDb(c));
    return c.text(text, 200, { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" });
  });

  routes.post("/jobs/:id/cancel", async (c) => {
    const id = parseRequest(JobIdParam, c.req.param("id"), "job id");
    await controlJob(await getDb(c), app, "cancel", id);
    return c.json({ id, cancelRequested: true });
  });

  routes.post("/jobs/:id/requeue", async (c) => {
    const id = parseRequest(JobIdParam, c.req.param("id"), "job id");
    await controlJob(await getDb(c), app, "requeue", id);
    return c.json({ id, state: "queued" });
  });

  registerBulkRoutes(routes, getDb, app);
  registerAdminRoutes(routes, getDb, app);

  // Mounted sub-apps fall through to the parent's notFound (plain text); keep akadze's answers JSON.
  routes.all("*", (c) => { throw new RouteProblem(404, "not_found", `no akadze route ${c.req.method} ${new URL(c.req.url).pathname}`); });

  return routes;
}

/** The request's `waitUntil`, if the runtime gave an ExecutionContext (Hono throws when it did not). */
function waitUntilOf(c: Context): ((promise: Promise<unknown>) => void) | undefined {
  try {
    const ctx = c.executionCtx;
    return (promise) => ctx.waitUntil(promise);
  } catch {
    return undefined;
  }
}

export { jobEventsToken, registerJobEventsRoute, DEFAULT_EVENTS_MAX_DURATION, DEFAULT_EVENTS_MAX_POLL, DEFAULT_EVENTS_POLL, type JobEventsOptions } from "./job-events.js";
export { nudge, NUDGE_BUDGET, type NudgeOptions } from "./nudge.js";
export { ownUrl, selfBinding, siblingBody, type Fetcher } from "./fan-out.js";
export { DEFAULT_MAX_INVOCATIONS, fanOutScope, type FanOutOptions, type FanOutReport, type FanOutTicket, type SiblingRequest } from "../runtime/fan-out.js";
export { LOG_LEVELS, type LogLevel } from "../ops/invocation-log.js";
export { scheduledInvocation, type ScheduledOptions } from "./cloudflare.js";
export { vercelHandlers } from "./vercel.js";
export { RouteProblem, INTERNAL_ERROR_MESSAGE, type ProblemBody } from "./problems.js";
