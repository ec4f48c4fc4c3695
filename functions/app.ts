// The example application: copy it, rename things, and replace `../src/...` imports with "akadze"
// and "akadze/hono". An order is written and its first job enqueued in one transaction; the jobs
// form a chain (charge -> ship -> notify) whose every step commits its own writes together with
// the next step's enqueue.
import { Hono } from "hono";
import * as v from "valibot";
import { eq, sql } from "drizzle-orm";
import { integer, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { connect, createApp, current, Fail, Retry, runAtomically, Snooze, type Db, type Duration } from "../src/index.js";
import { akadzeRoutes, nudge, ownUrl } from "../src/edge/hono.js";
import type { Dashboard } from "../src/edge/dashboard/index.js";

/** Bindings on Cloudflare, `process.env` on Vercel, set by `akadze dev` locally. */
export interface Env {
  DATABASE_URL: string;
  /** Bearer secret of the /akadze routes (Vercel Cron sends it as is). */
  CRON_SECRET: string;
  /** Only for local runs: where the Neon driver sends SQL, e.g. http://127.0.0.1:4001/sql from `akadze dev`. */
  NEON_FETCH_ENDPOINT?: string;
}

/** The application's own table, in its own drizzle schema (drizzle-kit migrates it in a real app). */
export const orders = pgTable("orders", {
  id: uuid("id").primaryKey(),
  /** The client's idempotency key: the same order posted twice is refused. */
  reference: text("reference").notNull().unique(),
  item: text("item").notNull(),
  quantity: integer("quantity").notNull(),
  status: text("status").notNull().default("placed"),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Creates the example's table; in your app this is a drizzle-kit migration. */
export async function setup(db: Db): Promise<void> {
  await db.execute(sql`create table if not exists orders (
    id uuid primary key, reference text not null unique, item text not null, quantity integer not null,
    status text not null default 'placed', created_at timestamptz not null default now())`);
}

/**
 * Neon over HTTP in every runtime (one request per statement, `db.batch` for a transaction); under
 * `akadze dev` and `wrangler dev`, NEON_FETCH_ENDPOINT points it at the local endpoint.
 */
export const dbFor = (env: Env): Promise<Db> => connect(env, { driver: "neon-http" });

export const app = createApp();

// How the stand-in payment provider behaves, so every path of a job can be seen.
const Payment = v.picklist(["ok", "flaky", "declined"]);

export const charge = app.task("orders.charge", {
  args: v.object({ orderId: v.string(), payment: Payment }),
  queue: "orders",
  timeout: "5s",
}, async ({ orderId, payment }, job) => {
  job.log(`charging order ${orderId}: ${payment} payment`); // kept with the job: akadze jobs show, the dashboard
  if (payment === "declined") throw new Fail("card declined"); // retrying cannot help
  if (payment === "flaky" && job.attempt === 1) throw new Retry("2s"); // the provider said: come back in 2 s
  const readyAt = new Date(Date.now() + 2_000).toISOString();
  // The order is paid and its shipping enqueued in the same transaction that completes this job.
  await current().completeBatch((db) => [
    db.update(orders).set({ status: "paid" }).where(eq(orders.id, orderId)),
    ship.using(db).enqueueQuery({ orderId, readyAt }),
  ]);
});

export const ship = app.task("orders.ship", {
  args: v.object({ orderId: v.string(), readyAt: v.string() }),
  queue: "orders",
  timeout: "5s",
}, async ({ orderId, readyAt }) => {
  // Waiting for the warehouse is not a failure: a snooze spends no attempt.
  if (Date.now() < Date.parse(readyAt)) throw new Snooze("1s");
  await current().completeBatch((db) => [
    db.update(orders).set({ status: "shipped" }).where(eq(orders.id, orderId)),
    notify.using(db).enqueueQuery({ orderId }),
  ]);
});

export const notify = app.task("orders.notify", {
  args: v.object({ orderId: v.string() }),
  queue: "orders",
  timeout: "5s",
}, async ({ orderId }) => ({ emailed: orderId }));

const NewOrder = v.strictObject({
  reference: v.pipe(v.string(), v.minLength(1), v.maxLength(100)),
  item: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
  quantity: v.pipe(v.number(), v.integer(), v.minValue(1)),
  payment: v.optional(Payment, "ok"),
});

/**
 * The HTTP app: the order routes, and akadze's routes under /akadze. `budget` is what one /akadze/work
 * call may spend; keep it inside the platform's time limit. `dashboard` (akadzeDashboard()) adds the web
 * dashboard at /akadze/ui; `akadze dev` serves it (functions/dev.ts), the deployed Worker leaves it out.
 * `fanOut: true` lets a /akadze/work call start sibling invocations through its own URL when the backlog
 * needs them (what `akadze dev` and a Vercel deployment do; docs/deploying.md).
 */
export function createWeb(options: { budget?: Duration; dashboard?: Dashboard; fanOut?: boolean } = {}): Hono<{ Bindings: Env }> {
  const web = new Hono<{ Bindings: Env }>();
  web.onError((error, c) => {
    console.error(error); // the detail (maybe SQL and its parameters) stays in the log
    return c.json({ error: { code: "internal_error", message: "the server could not complete the request" } }, 500);
  });

  web.post("/orders", async (c) => {
    const parsed = v.safeParse(NewOrder, await c.req.json().catch(() => undefined));
    if (!parsed.success) return c.json({ error: { code: "invalid_request", message: v.summarize(parsed.issues) } }, 400);
    const { payment, ...order } = parsed.output;
    const db = await dbFor(c.env);
    const id = crypto.randomUUID();
    try {
      // One transaction on any driver (on neon-http, one db.batch request): both rows commit or neither does.
      await runAtomically(db, (tx) => [
        tx.insert(orders).values({ id, ...order }),
        charge.using(tx).enqueueQuery({ orderId: id, payment }),
      ]);
    } catch (error) {
      if (isDuplicateReference(error)) return c.json({ error: { code: "duplicate_order", message: `order ${order.reference} was already placed` } }, 409);
      throw error;
    }
    nudge(c, app, { db, queues: ["orders"] }); // start the charge now rather than at the next cron tick
    return c.json({ id, ...order, status: "placed" }, 201);
  });

  web.get("/orders/:id", async (c) => {
    const id = v.safeParse(v.pipe(v.string(), v.uuid()), c.req.param("id"));
    const [order] = id.success ? await (await dbFor(c.env)).select().from(orders).where(eq(orders.id, id.output)) : [];
    return order ? c.json(order) : c.json({ error: { code: "not_found", message: "no such order" } }, 404);
  });

  web.route("/akadze", akadzeRoutes<{ Bindings: Env }>(app, {
    getDb: (c) => dbFor(c.env),
    getSecret: (c) => c.env.CRON_SECRET,
    budget: options.budget,
    dashboard: options.dashboard,
    // Siblings are started by calling this same route, with the same secret, at the URL the request came to.
    fanOut: options.fanOut ? (c) => ({ invoke: ownUrl(new URL(c.req.path, c.req.url), { secret: c.env.CRON_SECRET }) }) : undefined,
  }));
  return web;
}

/** The app with the default 25 s budget per /akadze/work call. */
export const web = createWeb();

function isDuplicateReference(error: unknown): boolean {
  for (let e: any = error; e; e = e.cause) if (e.code === "23505" && String(e.constraint ?? e.message).includes("orders_reference")) return true;
  return false;
}
