// functions/cloudflare.ts with the dashboard enabled, so scripts/measure-worker-size.ts can report what
// `akadzeDashboard()` adds to a Worker (an app that does not pass it bundles none of it).
import { scheduledInvocation } from "../src/edge/hono.js";
import { akadzeDashboard } from "../src/edge/dashboard/index.js";
import { app, createWeb, dbFor, type Env } from "../functions/app.js";

export default {
  fetch: createWeb({ dashboard: akadzeDashboard() }).fetch,
  scheduled: scheduledInvocation<Env>(app, { getDb: dbFor, budget: "25s" }),
};
