/**
 * akadze's web dashboard: queues, throughput, limits, schedules, workers and jobs, with requeue, cancel, replay
 * (one job, or every job a filter shows), pause/resume, and runtime schedules made, changed and deleted, server-rendered with Hono's JSX (no script, no external asset). Opt in by passing it to
 * `akadzeRoutes`; an app that does not import it bundles none of it.
 *
 * @example
 * import { akadzeRoutes } from "akadze/hono";
 * import { akadzeDashboard } from "akadze/dashboard";
 * web.route("/akadze", akadzeRoutes(app, { db, secret: process.env.CRON_SECRET, dashboard: akadzeDashboard() }));
 * // then open /akadze/ui and sign in with the same secret
 */
import { bodyLimit } from "hono/body-limit";
import { Hono, type Context, type Env } from "hono";
import { basePath } from "hono/route";
import * as v from "valibot";
import type { App } from "../../app/app.js";
import { parseDuration, type Duration } from "../../core/duration.js";
import { JOB_STATES } from "../../core/states.js";
import { pauseQueue, resumeQueue } from "../../control.js";
import type { Db } from "../../db/query.js";
import { getJob, listJobs } from "../../ops/jobs.js";
import { listLimits } from "../../ops/limits.js";
import { listQueues } from "../../ops/queues.js";
import { readThroughput } from "../../ops/throughput.js";
import { listWorkers } from "../../ops/workers.js";
import { listSchedules } from "../../ops/schedules.js";
import { createSchedule, deleteSchedule, pauseSchedule, readSchedule, resumeSchedule, updateSchedule } from "../../ops/runtime-schedules.js";
import { sessionSignedOut, signOutSession } from "../../ops/dashboard-sessions.js";
import { secretProblem, secretMatches } from "../auth.js";
import { parseRequest, problemOf, RouteProblem } from "../problems.js";
import { controlJob } from "../job-control.js";
import { JobIdParam } from "../requests.js";
import { JobPage, JobsPage } from "./jobs.js";
import { BULK_ACTIONS, bulkCounts, selectionFor, type BulkAction } from "./bulk.js";
import { BULK_OPERATIONS } from "../bulk-routes.js";
import { replayJob } from "../../ops/replay.js";
import { LoginPage, ProblemPage, type PageContext } from "./layout.js";
import { OverviewPage } from "./overview.js";
import { changeOfFields, entryOfFields, fieldsOfSchedule, NEW_SCHEDULE_FIELDS, ScheduleFormPage, scheduleFieldsOf, type ScheduleFields } from "./schedule-form.js";
import { CSRF_FIELD, csrfMatches, endSession, readSession, startSession, type Session } from "./session.js";

/** Where the dashboard is mounted inside `akadzeRoutes`. */
export const DASHBOARD_PATH = "/ui";
/** How long a sign-in lasts unless `sessionTtl` says otherwise. */
export const DEFAULT_SESSION_TTL = "12h";
/** Jobs per page of the list. */
export const JOBS_PAGE_SIZE = 50;

/** Options of `akadzeDashboard`. */
export interface DashboardOptions {
  /** How long a browser stays signed in. Default "12h". */
  sessionTtl?: Duration;
  /** The clock: what "now" is for sessions, ages and the chart. Default `() => new Date()`. */
  now?: () => Date;
}

/** What `akadzeRoutes` gives the dashboard: the app (for schedules), the database and the bearer secret. */
export interface DashboardHost<E extends Env> {
  app: App;
  getDb: (c: Context<E>) => Db | Promise<Db>;
  getSecret: (c: Context<E>) => string | undefined;
}

/** Adds the dashboard's pages to akadze's routes; the value of `akadzeRoutes`' `dashboard` option. */
export type Dashboard = <E extends Env>(routes: Hono<E>, host: DashboardHost<E>) => void;

// Redirect targets carry a fixed code, never free text, so a crafted link cannot put words on the page.
const NOTICES: Record<string, string> = {
  requeued: "Requeued: the job is queued again and runs at the next invocation.",
  cancelled: "Cancel requested: a queued job is cancelled now, a running one is asked to stop.",
  paused: "Queue paused: no invocation claims its jobs until it is resumed.",
  resumed: "Queue resumed.",
  replayed: "Replayed: this is the new job; the finished one stays as it was.",
  schedulePaused: "Schedule paused: none of its slots fires until it is resumed.",
  scheduleResumed: "Schedule resumed: it fires from its next slot on.",
  scheduleCreated: "Schedule created: it fires from its first slot after now.",
  scheduleUpdated: "Schedule saved: a new timing fires from its first slot after now.",
  scheduleDeleted: "Schedule deleted: its jobs already enqueued stay.",
};

/** A bulk action's notice: its fixed text and a count read as digits only. */
function bulkNotice(done: string | undefined, count: string | undefined): string | undefined {
  if (!done || !(done in BULK_ACTIONS) || !count || !/^\d{1,6}$/.test(count)) return undefined;
  const n = Number(count);
  return `${n} job${n === 1 ? "" : "s"} ${BULK_ACTIONS[done as BulkAction].done}.`;
}
const BulkActionParam = v.picklist(Object.keys(BULK_ACTIONS) as BulkAction[], "the bulk action is cancel, requeue or replay");

/** The largest form body the dashboard reads (its forms carry a secret, a CSRF token and a few ids). */
const MAX_FORM_BYTES = 16 * 1024;

const Blank = v.pipe(v.string(), v.transform((s) => s.trim() || undefined));
const ListQuery = v.object({
  state: v.optional(v.pipe(Blank, v.union([v.undefined(), v.picklist(JOB_STATES, `state must be one of ${JOB_STATES.join(", ")}`)]))),
  queue: v.optional(Blank),
  task: v.optional(Blank),
  before: v.optional(v.pipe(Blank, v.union([v.undefined(), JobIdParam]))),
});
// (Other parameters, such as the notice's `done`, pass.)
const OverviewQuery = v.object({ tenant: v.optional(Blank) });

/**
 * The dashboard, for `akadzeRoutes(app, { ..., dashboard: akadzeDashboard() })`: pages under `/ui`, signed
 * in with the routes' secret (an HttpOnly, SameSite=Strict, signed, Secure and expiring cookie, revoked
 * for good on sign-out), a CSRF token on every POST, all output escaped.
 * @example web.route("/akadze", akadzeRoutes(app, { db, secret, dashboard: akadzeDashboard({ sessionTtl: "8h" }) }));
 */
export function akadzeDashboard(options: DashboardOptions = {}): Dashboard {
  const ttlMs = parseDuration(options.sessionTtl ?? DEFAULT_SESSION_TTL, "sessionTtl");
  if (ttlMs < 1000) throw new TypeError("akadzeDashboard: sessionTtl must be at least 1s");
  const clock = options.now ?? (() => new Date());
  return <E extends Env>(routes: Hono<E>, host: DashboardHost<E>) => {
    const ui = new Hono<E>();
    type Guarded = (c: Context<E>, ctx: PageContext, db: Db, session: Session) => Promise<Response>;
    const context = (c: Context<E>, session: Session | null): PageContext => ({ base: basePath(c), csrf: session?.csrf ?? null, now: clock() });
    const secretOf = (c: Context<E>) => {
      const secret = host.getSecret(c);
      if (!secret) throw new RouteProblem(500, "no_secret", "akadze routes have no secret configured; set one (e.g. CRON_SECRET) to sign in");
      const problem = secretProblem(secret);
      if (problem) throw new RouteProblem(500, "bad_secret", problem);
      return secret;
    };
    const html = async (c: Context<E>, page: unknown, status = 200) => {
      // No script may run here, whatever a job's args hold; no other site may frame the pages.
      c.header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
      c.header("Cache-Control", "no-store");
      c.header("Referrer-Policy", "same-origin");
      // The doctype keeps browsers in standards mode; JSX cannot write one. The page is escaped JSX output.
      const text = await (page as { toString(): string | Promise<string> }).toString();
      return c.html(`<!doctype html>${text}`, status as 200);
    };
    // A page needs a live session; an action also the session's CSRF token in its form.
    const signedIn = (handler: Guarded, isAction = false) => async (c: Context<E>) => {
      const signed = await readSession(c, secretOf(c), clock().getTime());
      const db = signed ? await host.getDb(c) : null;
      // A cookie that verifies may still belong to a session that signed out (the cookie itself cannot be taken back).
      const session = signed && !(await sessionSignedOut(db!, signed.csrf)) ? signed : null;
      const ctx = context(c, session);
      if (!session) return html(c, <LoginPage ctx={ctx} problem="Sign in to see this page." />, 401);
      if (isAction && !(await csrfMatches(session, (await c.req.parseBody())[CSRF_FIELD]))) {
        return html(c, <ProblemPage ctx={ctx} title="Refused" message="This form is missing its CSRF token or it is stale: reload the page and try again." />, 403);
      }
      return handler(c, ctx, db!, session);
    };

    ui.onError((error, c) => {
      const { status, body } = problemOf(error);
      return html(c, <ProblemPage ctx={context(c, null)} title={status >= 500 ? "Something went wrong" : "Cannot do that"} message={body.error.message} />, status);
    });

    // Before any handler reads a form: the sign-in page answers strangers, so their bodies are capped here
    // (the routes' own limit comes after the bearer check, which the dashboard's pages do not pass through).
    ui.use("*", bodyLimit({
      maxSize: MAX_FORM_BYTES,
      onError: () => { throw new RouteProblem(413, "payload_too_large", `a dashboard form is at most ${MAX_FORM_BYTES} bytes`); },
    }));
    ui.get("/login", (c) => html(c, <LoginPage ctx={context(c, null)} />));
    ui.post("/login", async (c) => {
      const secret = secretOf(c);
      const submitted = (await c.req.parseBody())["secret"];
      if (typeof submitted !== "string" || !(await secretMatches(submitted, secret))) {
        return html(c, <LoginPage ctx={context(c, null)} problem="Wrong secret." />, 401);
      }
      await startSession(c, secret, basePath(c), ttlMs, clock().getTime());
      return c.redirect(basePath(c), 303);
    });
    ui.post("/logout", signedIn(async (c, ctx, db, session) => {
      // Recorded before the cookie is cleared: a copy of the cookie kept elsewhere no longer signs anyone in.
      await signOutSession(db, session.csrf, new Date(session.expiresAt), clock());
      endSession(c, ctx.base);
      return c.redirect(`${ctx.base}/login`, 303);
    }, true));

    ui.get("/", signedIn(async (c, ctx, db) => {
      const now = ctx.now;
      const { tenant } = parseRequest(OverviewQuery, c.req.query(), "overview query");
      const [queues, throughput, limits, schedules, workers] = await Promise.all([
        listQueues(db, { now }), readThroughput(db, { now }), listLimits(db, { now }),
        listSchedules(db, { app: host.app, now, tenant }), listWorkers(db, { now, limit: 20 }),
      ]);
      return html(c, <OverviewPage ctx={ctx} data={{ queues, throughput, limits, schedules, workers }} tenant={tenant} notice={NOTICES[c.req.query("done") ?? ""]} />);
    }));

    ui.get("/jobs", signedIn(async (c, ctx, db) => {
      const query = parseRequest(ListQuery, c.req.query(), "jobs filter");
      const [jobs, bulk] = await Promise.all([
        listJobs(db, { state: query.state, queue: query.queue, task: query.task, beforeId: query.before, limit: JOBS_PAGE_SIZE }),
        bulkCounts(db, query, host.app),
      ]);
      return html(c, <JobsPage ctx={ctx} query={query} jobs={jobs} pageSize={JOBS_PAGE_SIZE} bulk={bulk} notice={bulkNotice(c.req.query("done"), c.req.query("count"))} />);
    }));

    ui.get("/jobs/:id", signedIn(async (c, ctx, db) => {
      const id = parseRequest(JobIdParam, c.req.param("id"), "job id");
      const job = await getJob(db, id);
      if (!job) throw new RouteProblem(404, "not_found", `job ${id} does not exist`);
      return html(c, <JobPage ctx={ctx} job={job} notice={NOTICES[c.req.query("done") ?? ""]} />);
    }));

    // The same control functions as `akadze jobs requeue|cancel` and `akadze queues pause|resume`.
    for (const [name, done] of [["requeue", "requeued"], ["cancel", "cancelled"]] as const) {
      ui.post(`/jobs/:id/${name}`, signedIn(async (c, ctx, db) => {
        const id = parseRequest(JobIdParam, c.req.param("id"), "job id");
        await controlJob(db, host.app, name, id); // the app's transition hooks see the change, as from the routes
        return c.redirect(`${ctx.base}/jobs/${id}?done=${done}`, 303);
      }, true));
    }
    ui.post("/jobs/:id/replay", signedIn(async (c, ctx, db) => {
      const id = parseRequest(JobIdParam, c.req.param("id"), "job id");
      const replayed = await replayJob(db, id, { app: host.app });
      if (replayed === null) throw new RouteProblem(409, "conflict", `job ${id} has not finished (or no longer exists): only a finished job can be replayed`);
      return c.redirect(`${ctx.base}/jobs/${replayed}?done=replayed`, 303);
    }, true));
    // The list's bulk buttons post its filter; the notice carries the count (digits only) back.
    ui.post("/bulk/:action", signedIn(async (c, ctx, db) => {
      const action = parseRequest(BulkActionParam, c.req.param("action"), "bulk action");
      const query = parseRequest(ListQuery, await c.req.parseBody(), "jobs filter");
      const selection = selectionFor(action, query);
      if (!selection) throw new RouteProblem(400, "invalid_request", `${action} needs a filter whose jobs it can act on`);
      const count = await BULK_OPERATIONS[action].run(db, selection, { app: host.app });
      const back = new URLSearchParams({ ...selection.state ? { state: String(selection.state) } : {}, ...selection.queue ? { queue: selection.queue } : {},
        ...selection.task ? { task: selection.task } : {}, done: action, count: String(count) });
      return c.redirect(`${ctx.base}/jobs?${back}`, 303);
    }, true));
    // Runtime schedules: the same functions as `akadze schedules create|update|delete`. Input they refuse sends the
    // form back with their sentence (400, or 409 for a taken name) and changes nothing; schedules in code are not theirs.
    const tasks = () => [...host.app.tasks.keys()].sort();
    const formPage = async (c: Context<E>, ctx: PageContext, fields: ScheduleFields, editing?: string, error?: unknown) => {
      const problem = error === undefined ? undefined : problemOf(error);
      if (problem && problem.status >= 500) throw error;
      return html(c, <ScheduleFormPage ctx={ctx} fields={fields} tasks={tasks()} editing={editing} problem={problem?.body.error.message} />, problem?.status ?? 200);
    };
    const runtimeSchedule = async (db: Db, name: string) => {
      const found = await readSchedule(db, name);
      if (found === "code" || (found === null && host.app.schedules.has(name))) {
        throw new RouteProblem(409, "defined_in_code", `schedule ${JSON.stringify(name)} is defined in the app's code: change or remove it there`);
      }
      if (found === null) throw new RouteProblem(404, "not_found", `no runtime schedule ${JSON.stringify(name)}`);
      return found;
    };
    ui.get("/schedules/new", signedIn(async (c, ctx) =>
      formPage(c, ctx, { ...NEW_SCHEDULE_FIELDS, tenant: c.req.query("tenant")?.trim() ?? "", task: tasks()[0] ?? "" })));
    ui.post("/schedules/new", signedIn(async (c, ctx, db) => {
      const fields = scheduleFieldsOf(await c.req.parseBody());
      try {
        await createSchedule(db, entryOfFields(fields), { app: host.app, now: ctx.now });
      } catch (error) {
        return formPage(c, ctx, fields, undefined, error);
      }
      return c.redirect(`${ctx.base}?done=scheduleCreated`, 303);
    }, true));
    ui.get("/schedules/:name/edit", signedIn(async (c, ctx, db) => {
      const schedule = await runtimeSchedule(db, c.req.param("name") ?? "");
      return formPage(c, ctx, fieldsOfSchedule(schedule), schedule.name);
    }));
    ui.post("/schedules/:name/edit", signedIn(async (c, ctx, db) => {
      const current = await runtimeSchedule(db, c.req.param("name") ?? "");
      const fields = { ...scheduleFieldsOf(await c.req.parseBody()), name: current.name };
      try {
        if (!(await updateSchedule(db, current.name, changeOfFields(fields, current), { app: host.app, now: ctx.now }))) await runtimeSchedule(db, current.name);
      } catch (error) {
        return formPage(c, ctx, fields, current.name, error);
      }
      return c.redirect(`${ctx.base}?done=scheduleUpdated`, 303);
    }, true));
    ui.post("/schedules/:name/delete", signedIn(async (c, ctx, db) => {
      const name = c.req.param("name") ?? "";
      if (!(await deleteSchedule(db, name))) await runtimeSchedule(db, name); // says why: defined in code, or none
      return c.redirect(`${ctx.base}?done=scheduleDeleted`, 303);
    }, true));
    // The same functions as `akadze schedules pause|resume`, for runtime schedules.
    for (const [name, operation, done] of [["pause", pauseSchedule, "schedulePaused"], ["resume", resumeSchedule, "scheduleResumed"]] as const) {
      ui.post(`/schedules/:name/${name}`, signedIn(async (c, ctx, db) => {
        const schedule = c.req.param("name") ?? "";
        if (!(await operation(db, schedule, { app: host.app }))) throw new RouteProblem(404, "not_found", `no runtime schedule ${JSON.stringify(schedule)}`);
        return c.redirect(`${ctx.base}?done=${done}`, 303);
      }, true));
    }
    for (const [name, operation, done] of [["pause", pauseQueue, "paused"], ["resume", resumeQueue, "resumed"]] as const) {
      ui.post(`/queues/:name/${name}`, signedIn(async (c, ctx, db) => {
        await operation(db, c.req.param("name") ?? ""); // validates the name: an empty one is a 400
        return c.redirect(`${ctx.base}?done=${done}`, 303);
      }, true));
    }

    // Unknown pages answer only to a signed-in browser, so the 404 does not tell strangers what exists.
    ui.all("*", signedIn(async (c, ctx) => html(c, <ProblemPage ctx={ctx} title="Not found" message={`No dashboard page ${new URL(c.req.url).pathname}`} />, 404)));

    routes.route(DASHBOARD_PATH, ui);
  };
}
