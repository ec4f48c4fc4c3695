// Renders the statements the runtime sends most, as it sends them, into docs/sql/: an invocation's first claim
// and a later one, a claim with limits, a fair claim, a worker lane's first claim, and a settle (of successes, and
// of other outcomes). Each is captured from a real run on PGlite (drizzle's query logger), so the files are the SQL
// itself, not a reconstruction.
// test/repo/rendered-sql.test.ts renders them again and fails when they drift: run `npm run render-sql` after a
// change to the SQL and commit the result with it.
import { mkdirSync, writeFileSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { drizzle } from "drizzle-orm/pglite";
import * as v from "valibot";
import { sql, type SQL } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import { createApp, migrate, parseDuration, runOnce, runWorker, setLimit, type Db } from "../src/index.js";
import { claimCore } from "../src/sql/claim/claim.js";
import { timestamp } from "../src/sql/time.js";
import { resolveRetention } from "../src/core/retention.js";
import { HistoryKeeper } from "../src/runtime/history.js";
import { claimRiders, type Ride } from "../src/runtime/riders.js";
import { CLAIM_MARK } from "../src/sql/claim/claim.js";

/** The rendered statements, by file name. */
export async function renderStatements(): Promise<Record<string, string>> {
  const client = new PGlite();
  const texts: string[] = [];
  const db = drizzle(client, { logger: { logQuery: (query) => { texts.push(query); } } }) as unknown as Db;
  try {
    await migrate(db);
    const isClaim = (t: string) => t.includes(CLAIM_MARK);
    const isSettle = (t: string) => t.includes("settle_locked");
    const run = async (limits: boolean, fair = false, fails = false) => {
      const app = createApp();
      const task = app.task("render.noop", { args: v.object({}) }, async () => { if (fails) throw new Error("render: a failed run"); });
      if (limits) await setLimit(db, "render.key", { maxRunning: 2 });
      await task.using(db, limits ? { limitKey: "render.key" } : fair ? { fairKey: "render.tenant" } : {}).enqueueMany([{}, {}]);
      texts.length = 0;
      // (Two jobs, one slot: the first claim holds the second job, whose start rides on the first settle.)
      await runOnce(app, { db, slots: 1, batchSize: 2 });
      return [...texts];
    };
    const plain = await run(false);
    const limited = await run(true);
    const fair = await run(false, true);
    const failing = await run(false, false, true);
    const workerApp = createApp();
    workerApp.task("render.noop", { args: v.object({}) }, async () => {});
    texts.length = 0;
    const stop = new AbortController();
    const worker = runWorker(workerApp, { db, slots: 2, listen: false, signal: stop.signal, onStart: () => {} });
    const deadline = Date.now() + 20_000;
    while (!texts.some(isClaim) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    stop.abort();
    await worker;
    const pick = (list: string[], which: (t: string) => boolean, n = 0) => {
      const found = list.filter(which)[n];
      if (!found) throw new Error(`render-sql: statement ${n} not captured`);
      return `${found.trim()}\n`;
    };
    return {
      "invocation-first-claim.sql": pick(plain, isClaim, 0),
      "invocation-later-claim.sql": pick(plain, isClaim, 1),
      // (A process's first claim learns whether any limit exists; the next, sent at once when one does, carries the limit CTEs.)
      "invocation-later-claim-with-limits.sql": pick(limited, isClaim, 1),
      // (Likewise the fair CTEs, while some queued job has a fairness key.)
      "invocation-later-claim-fair.sql": pick(fair, isClaim, 1),
      "worker-first-claim.sql": pick(texts, isClaim, 0),
      "settle.sql": pick(plain, isSettle, 0),
      // (Any outcome but a success takes the settle's full form: the state decided per job, the requeue, the dead letters.)
      "settle-other-outcomes.sql": pick(failing, isSettle, 0),
      ...renderRiders(db),
    };
  } finally {
    await client.close();
  }
}

/**
 * What each rider adds to a claim (src/runtime/riders.ts), apart from the core: an invocation's first claim of 100
 * with every rider riding (a fan-out backlog, a schedule due, retention and the history on a caller's clock).
 */
function renderRiders(db: Db): Record<string, string> {
  const app = createApp();
  app.task("render.noop", { args: v.object({}) }, async () => {});
  app.periodic("render.every-minute", { every: "1m" }, async () => {});
  const now = () => new Date(0);
  const sqlNow = () => timestamp(null);
  const plan = resolveRetention(undefined)!;
  const riders = claimRiders({
    app, db, now, retention: { plan, due: () => true },
    history: new HistoryKeeper({ app, db, plan, sqlNow, callerClock: true }),
    registry: { id: "inv-1", queues: null, startedAt: now() }, backlog: () => 1000,
  });
  const core = claimCore({ owner: "inv-1#owner", now: sqlNow(), leaseMs: parseDuration("30s"), batchSize: 100, startCount: 10, tasks: ["render.noop"], queues: null, limits: false });
  const dialect = new PgDialect();
  const text = (part: SQL) => dialect.sqlToQuery(part).sql;
  const rendered = (name: string, ride: Ride | null) => {
    if (!ride) throw new Error(`render-sql: ${name} did not ride`);
    const parts = [
      `-- ${name}: what it adds to a claim (src/runtime/riders.ts); $n are bound per claim.`,
      ...(ride.before?.length ? ["-- Before the core's CTEs:", ride.before.map(text).join(",\n")] : []),
      ...(ride.after?.length ? ["-- After the core's `claimed`:", ride.after.map(text).join(",\n")] : []),
      ...(ride.report ? ["-- Reported in the answer:", Object.entries(ride.report).map(([name, value]) => text(sql`${sql.raw(`'${name}'`)}, ${value}`)).join(",\n")] : []),
    ];
    return `${parts.join("\n")}\n`;
  };
  // (As on an engine of one claim: a draining engine's claims carry recovery's probe in its place, rendered apart.)
  const entries = riders.map((rider) => [`rider-${rider.name}.sql`, rendered(`The ${rider.name} rider`, rider.ride({ first: true, batchSize: 100, drains: false, core }))]);
  const probe = riders.find((rider) => rider.name === "recovery")!.ride({ first: true, batchSize: 100, drains: true, core });
  return Object.fromEntries([...entries, ["rider-recovery-probe.sql", rendered("The recovery rider's probe, in its place on a draining engine's claims", probe)]]);
}

export const RENDERED_DIR = "docs/sql";

if (import.meta.url === `file://${process.argv[1]}`) {
  const rendered = await renderStatements();
  mkdirSync(RENDERED_DIR, { recursive: true });
  for (const [name, text] of Object.entries(rendered)) writeFileSync(`${RENDERED_DIR}/${name}`, `-- Rendered by scripts/render-sql.ts (npm run render-sql); test/repo/rendered-sql.test.ts keeps it current.\n${text}`);
  console.log(`wrote ${Object.keys(rendered).length} statements to ${RENDERED_DIR}/`);
}
