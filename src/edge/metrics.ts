import { sql } from "drizzle-orm";
import { JOB_STATES } from "../core/states.js";
import { queryJson, type Db } from "../db/driver.js";

/**
 * Minimal Prometheus text for `GET /metrics`: jobs by queue and state, every state listed for every
 * queue seen (absent ones as 0) so rates and alerts see a series go to zero instead of vanishing.
 * `akadzeRoutes(app, { metrics })` swaps in a fuller renderer.
 * @example const text = await renderQueueDepth(db);
 */
export async function renderQueueDepth(db: Db): Promise<string> {
  const rows = await queryJson<{ queue: string; state: string; count: number }[] | null>(db, sql`
    select jsonb_agg(jsonb_build_object('queue', queue, 'state', state, 'count', n) order by queue, state) as r
    from (select queue, state, count(*) as n from akadze.jobs group by queue, state) t`);
  const counts = new Map<string, Map<string, number>>();
  for (const row of rows ?? []) {
    if (!counts.has(row.queue)) counts.set(row.queue, new Map());
    counts.get(row.queue)!.set(row.state, Number(row.count));
  }
  const lines = ["# HELP akadze_jobs Jobs by queue and state.", "# TYPE akadze_jobs gauge"];
  for (const [queue, byState] of counts) {
    for (const state of JOB_STATES) lines.push(`akadze_jobs{queue="${escapeLabel(queue)}",state="${state}"} ${byState.get(state) ?? 0}`);
  }
  return `${lines.join("\n")}\n`;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
