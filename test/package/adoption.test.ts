// The packed akadze works with its peers (drizzle-orm, hono, the Neon driver, valibot) at the oldest versions
// package.json's ranges allow and at the latest: an app passing its own drizzle database type-checks with TypeScript
// 5.9 and 7 and runs its jobs on Postgres. `npm run test:adoption` runs it alone (minutes; not part of `npm test`).
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_URL, urlFor } from "../support/postgres.js";

// Two copies of drizzle (an exact pin of ours beside the app's) once made every `task.using(db)` a type error:
// "Property 'dialect' is protected but type 'PgSession<...>' is not ...".

const run = promisify(execFile);
const repo = fileURLToPath(new URL("../..", import.meta.url));
const own = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as {
  devDependencies: Record<string, string>; peerDependencies: Record<string, string>;
};
const PEERS = ["drizzle-orm", "hono", "@neondatabase/serverless", "valibot"];
/** The lowest version a range such as ">=0.40.1 <1" or "^4.12.20" admits. */
const oldest = (name: string) => /\d+\.\d+\.\d+/.exec(own.peerDependencies[name])![0];

// An app of the user's: its own table and drizzle database (with a schema), the enqueue alone, in its
// transaction (carrying the new order's id 1) and in runAtomically beside its insert, runOnce, and akadze's
// routes mounted in its Hono app.
const CHECK = `import { Hono } from "hono";
import * as v from "valibot";
import pg from "pg";
import { sql } from "drizzle-orm";
import { drizzle } from "drizzle-orm/node-postgres";
import { drizzle as drizzleHttp } from "drizzle-orm/neon-http";
import { pgTable, serial, text } from "drizzle-orm/pg-core";
import { neon } from "@neondatabase/serverless";
import { createApp, getJob, jobIdsOf, migrate, runAtomically, runOnce } from "akadze";
import { akadzeRoutes } from "akadze/hono";

const orders = pgTable("orders", { id: serial("id").primaryKey(), item: text("item").notNull() });
const app = createApp();
const ship = app.task("orders.ship", { args: v.object({ orderId: v.number() }) }, async ({ orderId }) => ({ shipped: orderId }));

/** Types only (no Neon endpoint here): a neon-http batch whose enqueue commits with the insert. */
export function onTheEdge(url: string) {
  const http = drizzleHttp({ client: neon(url) });
  return http.batch([http.insert(orders).values({ item: "cup" }), ship.using(http).enqueueQuery({ orderId: 4 })]);
}

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
const db = drizzle(pool, { schema: { orders } });
await migrate(db);
await db.execute(sql\`create table orders (id serial primary key, item text not null)\`);
const web = new Hono();
web.route("/akadze", akadzeRoutes(app, { db, secret: "s3cret", log: "silent" }));

const alone = await ship.using(db).enqueue({ orderId: 1 });
const inTransaction = await db.transaction(async (tx) => {
  const [order] = await tx.insert(orders).values({ item: "book" }).returning();
  return ship.using(tx).enqueue({ orderId: order.id });
});
const [, enqueued] = await runAtomically(db, (tx) => [tx.insert(orders).values({ item: "pen" }), ship.using(tx).enqueueQuery({ orderId: 3 })]);
const summary = await runOnce(app, { db });
const late = await ship.using(db).enqueue({ orderId: 5 });
const worked = await web.request("/akadze/work", { method: "POST", headers: { authorization: "Bearer s3cret" } });
const ids = [alone, inTransaction, ...jobIdsOf(enqueued), late];
const jobs = await Promise.all(ids.map(async (id) => { const job = await getJob(db, id); return [job?.state, job?.result]; }));
console.log("RESULT " + JSON.stringify({ succeeded: summary.succeeded, work: worked.status, jobs }));
await pool.end();
`;

describe("the packed akadze in apps with the oldest and the latest peers", () => {
  let root: string;
  let tarball: string;
  let admin: pg.Client;
  const databases: string[] = [];

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "akadze-adoption-"));
    const packed = await run("npm", ["pack", "--json", "--pack-destination", root], { cwd: repo, maxBuffer: 16 << 20 });
    tarball = join(root, (JSON.parse(packed.stdout) as { filename: string }[])[0].filename);
    admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
  }, 300_000);

  afterAll(async () => {
    rmSync(root, { recursive: true, force: true });
    for (const database of databases) await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
  });

  const matrix: { label: string; version: (name: string) => string }[] = [
    { label: "oldest", version: oldest },
    { label: "latest", version: () => "latest" },
  ];

  for (const { label, version } of matrix) {
    it(`${label} drizzle-orm, hono, @neondatabase/serverless and valibot: tsc 5.9 and 7 pass, jobs run`, async () => {
      const project = join(root, label);
      mkdirSync(project);
      writeFileSync(join(project, "package.json"), `${JSON.stringify({ name: `adoption-${label}`, private: true, type: "module" }, null, 2)}\n`);
      const packages = [tarball, ...PEERS.map((name) => `${name}@${version(name)}`), "pg@^8",
        `tsx@${own.devDependencies.tsx}`, `@types/node@${own.devDependencies["@types/node"]}`, `@types/pg@${own.devDependencies["@types/pg"]}`,
        `typescript@${own.devDependencies.typescript}`, "typescript7@npm:typescript@^7"];
      try {
        await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", ...packages], { cwd: project, maxBuffer: 16 << 20 });
      } catch {
        // A peer released since npm cached its metadata resolves as "undefined" offline (ERESOLVE): once more, online.
        await run("npm", ["install", "--prefer-online", "--no-audit", "--no-fund", ...packages], { cwd: project, maxBuffer: 16 << 20 });
      }

      const installed = (name: string) => JSON.parse(readFileSync(join(project, "node_modules", name, "package.json"), "utf8")).version as string;
      if (label === "oldest") expect(PEERS.map(installed)).toEqual(PEERS.map(oldest));
      // One copy of each: the app's, which akadze uses.
      expect(PEERS.filter((name) => existsSync(join(project, "node_modules/akadze/node_modules", name)))).toEqual([]);

      // The scaffold of `akadze init` and the app, with init's tsconfig, under both compilers.
      await run(join(project, "node_modules/.bin/akadze"), ["init"], { cwd: project });
      writeFileSync(join(project, "check.ts"), CHECK);
      for (const [compiler, major] of [["typescript", "5.9."], ["typescript7", "7."]]) {
        const tsc = join(project, "node_modules", compiler, "bin/tsc");
        expect((await run(process.execPath, [tsc, "--version"], { cwd: project })).stdout).toContain(`Version ${major}`);
        await run(process.execPath, [tsc, "-p", "."], { cwd: project, maxBuffer: 16 << 20 }).catch((error) => {
          throw new Error(`tsc ${major}x fails with ${label} peers:\n${error.stdout}${error.stderr}`);
        });
      }

      const database = `adoption_${label}_${process.pid}`;
      databases.push(database);
      await admin.query(`drop database if exists ${database}`);
      await admin.query(`create database ${database}`);
      const checked = await run(process.execPath, ["--import", "tsx", "check.ts"], { cwd: project, env: { ...process.env, DATABASE_URL: urlFor(database) } });
      const result = JSON.parse(/^RESULT (.*)$/m.exec(checked.stdout)![1]);
      expect(result).toEqual({
        succeeded: 3,
        work: 200, // the route's run took the job enqueued after runOnce

        jobs: [1, 1, 3, 5].map((orderId) => ["succeeded", { shipped: orderId }]),
      });
    }, 600_000);
  }
});
