// What `akadze init` writes into an existing project: the app module, the Cloudflare and Vercel entries,
// their cron config, the local env for `wrangler dev`. Each file is written only if it does not exist.

import { parseDuration } from "../core/duration.js";
import { NUDGE_BUDGET } from "../edge/nudge.js";
import { CLAIM_MARGIN_MS } from "../core/claim-margin.js";
import { DEFAULT_BUDGET } from "../runtime/run-options.js";

/** The longest task timeout a budget runs, in words. */
const fitsUnder = (budget: string) => `${(parseDuration(budget, "budget") - CLAIM_MARGIN_MS) / 1000} s`;

/** The local env `akadze dev` serves on its default ports (DEV_PORT 4000, the Neon endpoint on 4001). */
export const DEV_VARS = [
  "# Read by `wrangler dev`; `akadze dev` serves this database and endpoint. Not for production: use `wrangler secret put`.",
  "DATABASE_URL=postgres://postgres@127.0.0.1:4001/postgres",
  "NEON_FETCH_ENDPOINT=http://127.0.0.1:4001/sql",
  "CRON_SECRET=dev-secret",
  "",
].join("\n");

/** The app module: tasks, an enqueue route, akadze's routes. `dir` is where it lives, relative to the project. */
export function appModule(): string {
  return `// Your akadze tasks and the HTTP routes that enqueue and run them. Scaffolded by \`akadze init\`: edit freely.
// \`akadze dev\` and \`akadze worker\` find this module through package.json ("akadze": { "app": ... }).
import { Hono } from "hono";
import * as v from "valibot";
import { connect, createApp } from "akadze";
import { akadzeRoutes, nudge } from "akadze/hono";

/** Worker bindings on Cloudflare, process.env on Vercel and in Node; \`akadze dev\` sets them locally. */
export interface Env {
  /** postgres://... of your database (Neon in production). */
  DATABASE_URL: string;
  /** Bearer secret of the /akadze routes (Vercel Cron sends it as is). */
  CRON_SECRET: string;
  /** Only for local runs: where the Neon driver sends SQL (\`akadze dev\` prints it). */
  NEON_FETCH_ENDPOINT?: string;
}

export const app = createApp();

export const greet = app.task("greet", {
  args: v.object({ name: v.string() }),
  // A timeout must fit the budget of whatever runs the job, less ${CLAIM_MARGIN_MS / 1000} s to claim: the nudge in POST /greet
  // runs ${NUDGE_BUDGET} (so at most ${fitsUnder(NUDGE_BUDGET)}), the /akadze/work route and the cron ${DEFAULT_BUDGET} (at most ${fitsUnder(DEFAULT_BUDGET)}).
  // A longer task never runs from a nudge: enqueue it without one and let the cron take it.
  timeout: "5s",
}, async ({ name }, job) => ({ greeting: \`hello, \${name}\`, attempt: job.attempt }));

export const web = new Hono<{ Bindings: Env }>();

// Enqueue in your own request handler; with your own writes, use db.transaction (node-postgres) or
// db.batch([...yourInsert, greet.using(db).enqueueQuery(args)]) (neon-http) so both commit together.
web.post("/greet", async (c) => {
  const body = v.safeParse(v.object({ name: v.string() }), await c.req.json().catch(() => undefined));
  if (!body.success) return c.json({ error: v.flatten(body.issues) }, 400);
  const db = await connect(c.env);
  const id = await greet.using(db).enqueue(body.output);
  nudge(c, app, { db }); // run it now rather than at the next cron tick
  return c.json({ id }, 202);
});

// POST /akadze/work runs one invocation (the Vercel cron calls it), plus metrics and the admin API.
web.route("/akadze", akadzeRoutes<{ Bindings: Env }>(app, {
  getDb: (c) => connect(c.env),
  getSecret: (c) => c.env.CRON_SECRET,
}));
`;
}

/** The Cloudflare Worker entry: the routes, and the cron trigger running one invocation. */
export function cloudflareEntry(): string {
  return `// Cloudflare Worker: requests go to the app, the cron trigger in wrangler.toml runs one invocation.
import { connect } from "akadze";
import { scheduledInvocation } from "akadze/hono";
import { app, web, type Env } from "./app.js";

export default {
  fetch: web.fetch,
  // 25 s: inside the 30 s CPU limit of a paid Worker, and done before the next minute's tick.
  scheduled: scheduledInvocation<Env>(app, { getDb: (env) => connect(env), budget: "25s" }),
};
`;
}

/** The Vercel function: the same app under /api; vercel.json sends the cron to /api/akadze/work. */
export function vercelEntry(appImport: string): string {
  return `// Vercel function (Node.js runtime): the app under /api; vercel.json routes /api/greet and /api/akadze/* here.
import { Hono } from "hono";
import { vercelHandlers } from "akadze/hono";
import { web, type Env } from "${appImport}";

const api = new Hono<{ Bindings: Env }>().basePath("/api").route("/", web);

export const { GET, POST } = vercelHandlers(api, () => process.env as unknown as Env);
`;
}

/** wrangler.toml for a project that has none. */
export function wranglerToml(name: string, main: string): string {
  return `# Cloudflare Worker for akadze (scaffolded by \`akadze init\`). Secrets:
#   npx wrangler secret put DATABASE_URL   # postgres://... of your Neon database
#   npx wrangler secret put CRON_SECRET    # bearer secret of the /akadze/* routes
# Locally, \`wrangler dev\` reads .dev.vars (served by \`akadze dev --no-http\`).
name = ${JSON.stringify(name)}
main = ${JSON.stringify(main)}
compatibility_date = "2026-04-01"
compatibility_flags = ["nodejs_compat"]
# Minified, the Worker is about half the size.
minify = true

# One invocation a minute (UTC); each runs jobs for up to 25 s.
[triggers]
crons = ["* * * * *"]
`;
}

/** What wrangler.toml needs, for a project that has its own. */
export const WRANGLER_ADDITIONS = 'minify = true, compatibility_flags = ["nodejs_compat"], [triggers] crons = ["* * * * *"]';

/** vercel.json's part: the function's duration, the routes, the cron. */
export function vercelConfig(entry: string): Record<string, unknown> {
  return {
    functions: { [entry]: { maxDuration: 60 } },
    rewrites: [
      { source: "/api/greet", destination: "/api/akadze" },
      { source: "/api/akadze/(.*)", destination: "/api/akadze" },
    ],
    crons: [{ path: "/api/akadze/work", schedule: "* * * * *" }],
  };
}

/** Lines .gitignore should have: PGlite's data and the local secrets. */
export const GITIGNORE_LINES = [".akadze/", ".dev.vars"];

/**
 * tsconfig.json for a project that has none: ES modules resolved as Node does (the scaffold imports "./app.js"),
 * strict, type-checking only (wrangler, Vercel and tsx compile). `types` names @types/node: TypeScript 7 no
 * longer includes every @types package by default, and the scaffold reads `process.env`.
 */
export const TSCONFIG = `${JSON.stringify({
  compilerOptions: {
    target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", lib: ["ES2022", "DOM", "DOM.Iterable"],
    strict: true, skipLibCheck: true, noEmit: true, jsx: "react-jsx", jsxImportSource: "hono/jsx", types: ["node"],
  },
  exclude: ["node_modules", "dist"],
}, null, 2)}\n`;
