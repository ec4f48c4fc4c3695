// The same stack without akadze, to measure what a Worker costs anyway (scripts/measure-worker-size.ts):
// a Hono route that validates a body with valibot and inserts a row with drizzle over Neon's HTTP driver.
import { Hono } from "hono";
import * as v from "valibot";
import { neon } from "@neondatabase/serverless";
import { drizzle } from "drizzle-orm/neon-http";
import { integer, pgTable, text, uuid } from "drizzle-orm/pg-core";

const orders = pgTable("orders", { id: uuid("id").primaryKey(), item: text("item").notNull(), quantity: integer("quantity").notNull() });
const NewOrder = v.object({ item: v.string(), quantity: v.number() });

const web = new Hono<{ Bindings: { DATABASE_URL: string } }>();
web.post("/orders", async (c) => {
  const order = v.parse(NewOrder, await c.req.json());
  const db = drizzle({ client: neon(c.env.DATABASE_URL) });
  await db.batch([db.insert(orders).values({ id: crypto.randomUUID(), ...order })]);
  return c.json(order, 201);
});

export default { fetch: web.fetch };
