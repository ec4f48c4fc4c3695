// `akadze dev` and the app's own tables: an app module's `setup(db)` runs once at start, after akadze's
// migrations, on the database dev serves, so the app's routes and tasks find their tables there.
import { afterAll, beforeAll, expect, it } from "vitest";
import { Hono } from "hono";
import { sql } from "drizzle-orm";
import { connect, createApp, type Db } from "../../src/index.js";
import { akadzeRoutes } from "../../src/edge/hono.js";
import { queryJson } from "../../src/db/query.js";
import { startDevServer, type DevEnv, type DevServer } from "../../src/dev/dev-server.js";
import { waitFor } from "../support/wait-for.js";

const app = createApp();
const seen: string[] = [];
let server: DevServer;
const note = app.task("note.count", async () => queryJson<number>(server.db, sql`select count(*)::int as r from notes`));
const web = new Hono<{ Bindings: DevEnv }>().post("/notes", async (c) => {
  const db = await connect(c.env);
  await db.execute(sql`insert into notes (text) values ('hello')`);
  return c.json({ id: await note.using(db).enqueue({}) }, 202);
});
web.route("/akadze", akadzeRoutes<{ Bindings: DevEnv }>(app, { getDb: (c) => connect(c.env), getSecret: (c) => c.env.CRON_SECRET }));
async function setup(db: Db): Promise<void> {
  // akadze's tables are already there when setup runs.
  seen.push(...await queryJson<string[]>(db, sql`select jsonb_build_array(to_regclass('akadze.jobs')::text) as r`));
  await db.execute(sql`create table if not exists notes (id serial primary key, text text not null)`);
}

beforeAll(async () => {
  server = await startDevServer({ module: { app, web, setup }, database: "memory://", port: 0, tickMs: 100 });
}, 60_000);
afterAll(async () => { await server?.close(); });

it("setup(db) creates the app's own tables once at start, after akadze's, where its routes and tasks use them", async () => {
  expect(seen).toEqual(["akadze.jobs"]);
  const posted = await fetch(`${server.appUrl}/notes`, { method: "POST" });
  expect(posted.status).toBe(202);
  const { id } = await posted.json() as { id: number };
  const result = () => queryJson<unknown>(server.db, sql`select result as r from akadze.all_jobs where id = ${id} and state = 'succeeded'`);
  await waitFor(async () => (await result()) !== null && (await result()) !== undefined, "the note job", { timeoutMs: 30_000 });
  expect(await result()).toBe(1);
});
