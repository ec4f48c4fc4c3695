import type pg from "pg";
import type { SentStatement } from "./statements.js";

/** A node of `EXPLAIN (FORMAT JSON)`'s plan, with the fields the tests and the bench read. */
export interface PlanNode {
  "Node Type": string;
  "Total Cost"?: number;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Index Cond"?: string;
  "Subplan Name"?: string;
  "Actual Loops"?: number;
  "Actual Rows"?: number;
  "Rows Removed by Filter"?: number;
  "Heap Fetches"?: number;
  "Shared Hit Blocks"?: number;
  "Shared Read Blocks"?: number;
  Plans?: PlanNode[];
}

/**
 * `node` and every node under it, depth first.
 * @example planNodes(plan).filter((n) => n["Relation Name"] === "jobs")
 */
export function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

/** The pages read by the scans of `index` under `node` (hit or read): an analyzed plan's. */
export function indexPagesRead(node: PlanNode, index: string): number {
  return planNodes(node).filter((n) => n["Index Name"] === index)
    .reduce((sum, n) => sum + (n["Shared Hit Blocks"] ?? 0) + (n["Shared Read Blocks"] ?? 0), 0);
}

/** The fairness indexes: the walk's, the turns', each key's last turn, the parked jobs'. */
const FAIR_INDEXES = new Set(["jobs_fair_idx", "jobs_tag_idx", "jobs_key_tag_idx", "jobs_parked_idx"]);

/** The index scans of the fairness indexes under `node`, loops summed: a fair claim's probes. */
export function fairProbes(node: PlanNode): number {
  return planNodes(node).reduce((sum, n) => sum + (FAIR_INDEXES.has(n["Index Name"] ?? "") ? n["Actual Loops"] ?? 0 : 0), 0);
}

/**
 * The plan of `statement` as the engine sent it, explained (with `analyze`: run, buffers counted) in a transaction rolled back, so
 * the rows stay as they were.
 */
export async function planOf(pool: pg.Pool, statement: SentStatement, analyze = false): Promise<PlanNode> {
  const client = await pool.connect();
  try {
    await client.query("begin");
    const rows = (await client.query(`explain (${analyze ? "analyze, buffers, " : ""}format json) ${statement.text}`, statement.values)).rows;
    return (rows[0]["QUERY PLAN"] as { Plan: PlanNode }[])[0]!.Plan;
  } finally {
    await client.query("rollback");
    client.release();
  }
}
