// What one claim costs each row design while other jobs run: `held` jobs are claimed first and left leased (long
// bodies, an invocation's prefetch), then a claim of `batch` is explained (ANALYZE, BUFFERS) in a transaction
// that is rolled back, `repeats` times: a design whose queued index still holds the running jobs (B1, B2) walks
// past every one of them on each claim. Buffers are counted, so the figure does not depend on the machine's load.
//   npx tsx bench/row-designs-held.ts [held[,held]] [batch] [repeats]     # 0, 1,000 and 10,000 held, batch 100, 10 repeats
import pg from "pg";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate, type Db } from "../src/index.js";
import { ENQUEUE_CHUNK } from "./akadze.js";
import { rolledBack, withDatabase } from "./databases.js";
import { median } from "./stats.js";
import { ROW_DESIGNS, type RowDesign } from "./row-designs-sql.js";
import { planNodes, type PlanNode } from "../test/support/plan-nodes.js";

interface HeldClaim {
  design: string; held: number; executionMs: number; planningMs: number;
  /** Buffers the whole statement touched, and those of its scan for candidates alone (the LockRows node and below). */
  buffers: number; scanBuffers: number;
  /** The indexes the scan walked. */
  scanIndexes: string; claimed: number;
}

const buffersOf = (n: PlanNode) => (n["Shared Hit Blocks"] ?? 0) + (n["Shared Read Blocks"] ?? 0);

const indexesUnder = (n: PlanNode) => planNodes(n).flatMap((x) => x["Index Name"] ?? (x["Node Type"] === "Seq Scan" ? ["seq scan"] : []));

/** One claim of `batch` by another owner, explained and rolled back: its times and the buffers it touched. */
async function explainClaim(client: pg.Client, design: RowDesign, batch: number): Promise<Omit<HeldClaim, "design" | "held">> {
  return rolledBack(client, async () => {
    // The claim's plan as on a table with a backlog: an index walk in claim order (on these small tables the
    // planner may prefer to read every row and sort them).
    await client.query("set local enable_seqscan = off");
    const { rows } = await client.query(`explain (analyze, buffers, format json) ${design.claim}`, [batch, "other"]);
    const [top] = rows[0]["QUERY PLAN"] as { Plan: PlanNode; "Execution Time": number; "Planning Time": number }[];
    const scan = planNodes(top.Plan).find((n) => n["Node Type"] === "LockRows");
    return {
      executionMs: top["Execution Time"], planningMs: top["Planning Time"],
      buffers: buffersOf(top.Plan), scanBuffers: scan ? buffersOf(scan) : NaN, scanIndexes: scan ? [...new Set(indexesUnder(scan))].join(", ") : "?",
      claimed: top.Plan["Actual Rows"] ?? 0,
    };
  });
}

export async function heldClaim(design: RowDesign, held: number, batch: number, repeats: number): Promise<HeldClaim> {
  return withDatabase(`held_${design.name.split(" ")[0]}`, async (database) => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      await migrate(drizzle(client) as unknown as Db);
      for (const statement of design.setup) await client.query(statement);
      const count = held + 10 * batch;
      for (let i = 0; i < count; i += ENQUEUE_CHUNK) {
        await client.query(design.enqueue, [JSON.stringify(Array.from({ length: Math.min(ENQUEUE_CHUNK, count - i) }, () => ({})))]);
      }
      for (let i = 0; i < held; i += ENQUEUE_CHUNK) await client.query(design.claim, [Math.min(ENQUEUE_CHUNK, held - i), "holder"]);
      await client.query("vacuum analyze");
      await explainClaim(client, design, batch); // (plans and caches warm)
      const runs = [];
      for (let r = 0; r < repeats; r++) runs.push(await explainClaim(client, design, batch));
      const claimed = runs[0].claimed;
      if (runs.some((x) => x.claimed !== batch)) throw new Error(`${design.name}: a claim of ${batch} took ${claimed}`);
      return {
        design: design.name, held, claimed,
        executionMs: median(runs.map((x) => x.executionMs)), planningMs: median(runs.map((x) => x.planningMs)), buffers: median(runs.map((x) => x.buffers)),
        scanBuffers: median(runs.map((x) => x.scanBuffers)), scanIndexes: runs[0].scanIndexes,
      };
    } finally {
      await client.end();
    }
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const helds = (process.argv[2] ?? "0,1000,10000").split(",").map(Number);
  const batch = Number(process.argv[3] ?? 100);
  const repeats = Number(process.argv[4] ?? 10);
  console.log("| design | jobs held (running) | claim execution ms (median) | planning ms | buffers: statement | of which the scan | scan walks | jobs claimed |\n|---|---|---|---|---|---|---|---|");
  const only = process.env.ROW_DESIGNS?.split(",");
  for (const design of only ? ROW_DESIGNS.filter((d) => only.some((o) => d.name.startsWith(o))) : ROW_DESIGNS) {
    for (const held of helds) {
      const r = await heldClaim(design, held, batch, repeats);
      console.log(`| ${r.design} | ${r.held} | ${r.executionMs.toFixed(2)} | ${r.planningMs.toFixed(2)} | ${r.buffers} | ${r.scanBuffers} | ${r.scanIndexes} | ${r.claimed} |`);
    }
  }
}
