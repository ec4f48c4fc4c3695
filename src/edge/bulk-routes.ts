// Bulk cancel, requeue and replay over HTTP: the same operations as `akadze jobs cancel|requeue|replay`.
import * as v from "valibot";
import type { Context, Env, Hono } from "hono";
import type { App } from "../app/app.js";
import { FINISHED_STATES, type JobState } from "../core/states.js";
import type { Db } from "../db/query.js";
import { cancelJobs, requeueJobs } from "../ops/bulk.js";
import type { BulkOptions, JobSelection } from "../ops/job-selection.js";
import { getJob } from "../ops/jobs.js";
import { replayJob, replayJobs } from "../ops/replay.js";
import { parseRequest, RouteProblem } from "./problems.js";
import { JobIdParam, jsonBody } from "./requests.js";

/** The bulk operations by name, with the states each acts on: one list for the routes and the dashboard. */
export const BULK_OPERATIONS = {
  cancel: { run: cancelJobs, states: ["queued", "running"] },
  requeue: { run: requeueJobs, states: ["failed"] },
  replay: { run: replayJobs, states: FINISHED_STATES },
} as const satisfies Record<string, {
  run: (db: Db, selection: JobSelection, options: BulkOptions & { app?: App }) => Promise<number>; states: readonly JobState[];
}>;
/** The name of a bulk operation: cancel, requeue or replay. */
export type BulkOperation = keyof typeof BULK_OPERATIONS;

const ReplayBody = v.strictObject({ args: v.optional(v.unknown()) });

/**
 * Adds `POST /jobs/cancel`, `POST /jobs/requeue` and `POST /jobs/replay`, each with a JSON body that is a
 * `JobSelection` plus `dryRun` (`{ "task": "mail.send", "state": "queued", "dryRun": true }`), answering
 * `{ count, dryRun }`; and `POST /jobs/:id/replay` (body `{ args }`, optional), answering `{ id, replayedAs }`:
 * 404 for an unknown job, 409 for one that has not finished or whose unique key an active job holds. A bad
 * selection is a 400 and changes nothing; the app's transition hooks see the changes, and its schema checks
 * new args.
 * @example registerBulkRoutes(routes, () => db, app);
 */
export function registerBulkRoutes<E extends Env>(routes: Hono<E>, getDb: (c: Context<E>) => Db | Promise<Db>, app: App): void {
  for (const [name, { run: operation }] of Object.entries(BULK_OPERATIONS)) {
    routes.post(`/jobs/${name}`, async (c) => {
      const { dryRun, ...selection } = await jsonBody(c);
      const dry = dryRun === undefined ? false : dryRun;
      const count = await operation(await getDb(c), selection as JobSelection, { dryRun: dry as boolean, app });
      return c.json({ count, dryRun: dry });
    });
  }
  routes.post("/jobs/:id/replay", async (c) => {
    const id = parseRequest(JobIdParam, c.req.param("id"), "job id");
    const body = parseRequest(ReplayBody, await jsonBody(c), "replay request");
    const db = await getDb(c);
    const replayedAs = await replayJob(db, id, { ...("args" in body ? { args: body.args } : {}), app });
    if (replayedAs !== null) return c.json({ id, replayedAs });
    const job = await getJob(db, id);
    if (!job) throw new RouteProblem(404, "not_found", `job ${id} does not exist`);
    throw new RouteProblem(409, "conflict", `job ${id} is ${job.state}; only a finished job can be replayed`, { state: job.state });
  });
}
