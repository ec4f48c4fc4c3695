import type { App } from "../app/app.js";
import { requestCancel, requeue } from "../control.js";
import type { Db } from "../db/query.js";
import { getJob } from "../ops/jobs.js";
import { RouteProblem } from "./problems.js";

/** The job controls the routes and the dashboard expose (the same functions as `akadze jobs cancel|requeue`), with the rule a refusal cites. */
const JOB_CONTROLS = {
  cancel: { run: requestCancel, rule: "only a queued or running job can be cancelled" },
  requeue: { run: requeue, rule: "only a failed job can be requeued" },
} as const;

/**
 * Cancels or requeues job `id`, reporting the change to the app's transition hooks. When it changes nothing:
 * 404 if the job does not exist, else 409 with its state and the rule.
 */
export async function controlJob(db: Db, app: App, control: keyof typeof JOB_CONTROLS, id: number): Promise<void> {
  const { run, rule } = JOB_CONTROLS[control];
  if (await run(db, id, app)) return;
  const job = await getJob(db, id);
  if (!job) throw new RouteProblem(404, "not_found", `job ${id} does not exist`);
  throw new RouteProblem(409, "conflict", `job ${id} is ${job.state}; ${rule}`, { state: job.state });
}
