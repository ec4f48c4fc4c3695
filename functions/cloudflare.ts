// Cloudflare Worker: HTTP requests go to the example app (with akadze's routes under /akadze);
// the cron trigger in wrangler.toml runs one invocation.
import { scheduledInvocation } from "../src/edge/hono.js";
import { app, dbFor, web, type Env } from "./app.js";

export default {
  fetch: web.fetch,
  // 25 s: inside the 30 s CPU limit of a paid Worker, and done before the next minute's tick.
  scheduled: scheduledInvocation<Env>(app, { getDb: dbFor, budget: "25s" }),
};
