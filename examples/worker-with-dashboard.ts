// functions/cloudflare.ts with the dashboard enabled: scripts/measure-worker-size.ts reports what
// `akadzeDashboard()` adds to a Worker, and test/edge/dashboard/dashboard-in-workerd.test.ts runs it in workerd.
import { scheduledInvocation } from "../src/edge/hono.js";
import { akadzeDashboard } from "../src/edge/dashboard/index.js";
import { app, createWeb, dbFor, type Env } from "../functions/app.js";

export default {
  fetch: createWeb({ dashboard: akadzeDashboard() }).fetch,
  scheduled: scheduledInvocation<Env>(app, { getDb: dbFor, budget: "25s" }),
};
