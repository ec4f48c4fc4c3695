// The JSON admin API: the CLI's read and control operations over HTTP, behind the same bearer secret.
import * as v from "valibot";
import type { Context, Env, Hono } from "hono";
import { DurationSchema } from "../core/duration.js";
import { deleteLimit, pauseQueue, resumeQueue, setLimit } from "../control.js";
import type { Db } from "../db/query.js";
import { getJob, listJobs, MAX_LIST_LIMIT } from "../ops/jobs.js";
import { listLimits } from "../ops/limits.js";
import { listQueues } from "../ops/queues.js";
import { listSchedules } from "../ops/schedules.js";
import { createSchedule, deleteSchedule, pauseSchedule, resumeSchedule, updateSchedule } from "../ops/runtime-schedules.js";
import type { App } from "../app/app.js";
import { listWorkers } from "../ops/workers.js";
import { parseRequest as parse, RouteProblem } from "./problems.js";
import { CountParam, JobIdParam, jsonBody, queryObject } from "./requests.js";

const Limit = CountParam("limit", MAX_LIST_LIMIT);
const JobsQuery = v.strictObject({
  status: v.optional(v.string()), queue: v.optional(v.string()), task: v.optional(v.string()), limit: v.optional(Limit),
});
const SchedulesQuery = v.strictObject({ tenant: v.optional(v.string()) });
const WorkersQuery = v.strictObject({ since: v.optional(DurationSchema), all: v.optional(v.picklist(["true", "false"])), limit: v.optional(Limit) });

/**
 * Adds `GET /jobs`, `GET /jobs/:id`, `GET /queues`, `POST /queues/:name/pause|resume`, `GET /limits`,
 * `PUT /limits/:key` (JSON `{ maxStarts, window, maxRunning }`), `DELETE /limits/:key`, `GET /workers` and
 * `GET /schedules` (`?tenant=`), and for runtime schedules `POST /schedules` (a `createSchedule` entry),
 * `PATCH /schedules/:name` (a `ScheduleChange`), `POST /schedules/:name/pause|resume` and `DELETE /schedules/:name`
 * to akadze's routes. Invalid input is a 400 from the same validation the CLI uses, a taken schedule name a 409.
 * With the app, schedules are listed with their definitions and next slots, as the dashboard shows them; creating
 * and changing a runtime schedule needs it (its task's schema checks the args).
 * @example registerAdminRoutes(routes, () => db, app);
 */
export function registerAdminRoutes<E extends Env>(routes: Hono<E>, getDb: (c: Context<E>) => Db | Promise<Db>, app?: App): void {
  routes.get("/jobs", async (c) => {
    const q = parse(JobsQuery, queryObject(new URL(c.req.url)), "jobs query");
    return c.json(await listJobs(await getDb(c), { state: q.status as never, queue: q.queue, task: q.task, limit: q.limit }));
  });
  routes.get("/jobs/:id", async (c) => {
    const id = parse(JobIdParam, c.req.param("id"), "job id");
    const job = await getJob(await getDb(c), id);
    if (!job) throw new RouteProblem(404, "not_found", `job ${id} does not exist`);
    return c.json(job);
  });

  routes.get("/queues", async (c) => c.json(await listQueues(await getDb(c))));
  for (const [action, operation] of [["pause", pauseQueue], ["resume", resumeQueue]] as const) {
    routes.post(`/queues/:name/${action}`, async (c) => {
      const name = c.req.param("name");
      await operation(await getDb(c), name); // validates the name: InvalidInput is a 400
      return c.json({ queue: name, paused: action === "pause" });
    });
  }

  routes.get("/limits", async (c) => c.json(await listLimits(await getDb(c))));
  routes.put("/limits/:key", async (c) => {
    return c.json(await setLimit(await getDb(c), c.req.param("key"), await jsonBody(c)));
  });
  routes.delete("/limits/:key", async (c) => {
    const key = c.req.param("key");
    if (!(await deleteLimit(await getDb(c), key))) throw new RouteProblem(404, "not_found", `no limit for key ${JSON.stringify(key)}`);
    return c.json({ key, deleted: true });
  });

  routes.get("/workers", async (c) => {
    const q = parse(WorkersQuery, queryObject(new URL(c.req.url)), "workers query");
    return c.json(await listWorkers(await getDb(c), { since: q.since, all: q.all === "true", limit: q.limit }));
  });
  routes.get("/schedules", async (c) => {
    const q = parse(SchedulesQuery, queryObject(new URL(c.req.url)), "schedules query");
    return c.json(await listSchedules(await getDb(c), { app, tenant: q.tenant }));
  });
  const withApp = (): App => {
    if (!app) throw new RouteProblem(400, "no_app", "these routes were set up without the app, whose tasks a runtime schedule names");
    return app;
  };
  const missing = (name: string) => new RouteProblem(404, "not_found", `no runtime schedule ${JSON.stringify(name)}`);
  routes.post("/schedules", async (c) => c.json(await createSchedule(await getDb(c), await jsonBody(c) as never, { app: withApp() }), 201));
  routes.patch("/schedules/:name", async (c) => {
    const name = c.req.param("name");
    const updated = await updateSchedule(await getDb(c), name, await jsonBody(c), { app: withApp() });
    if (!updated) throw missing(name);
    return c.json(updated);
  });
  for (const [action, operation] of [["pause", pauseSchedule], ["resume", resumeSchedule]] as const) {
    routes.post(`/schedules/:name/${action}`, async (c) => {
      const name = c.req.param("name");
      if (!(await operation(await getDb(c), name, { app }))) throw missing(name);
      return c.json({ name, paused: action === "pause" });
    });
  }
  routes.delete("/schedules/:name", async (c) => {
    const name = c.req.param("name");
    if (!(await deleteSchedule(await getDb(c), name))) throw missing(name);
    return c.json({ name, deleted: true });
  });
}
