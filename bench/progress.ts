// What job.progress() costs in statements (issue 39): one body reports 10,000 times, in a tight loop and with a
// real await between calls, and the statements its run sends are counted against the same run reporting nothing.
import { createApp, getJob, runOnce } from "../src/index.js";
import type { AkadzeDriver } from "./akadze-db.js";
import { openAkadze } from "./akadze-db.js";

export interface ProgressLoopRow {
  driver: AkadzeDriver;
  /** "tight" (no await between calls) or "awaiting" (a macrotask between calls, as real work would). */
  loop: "tight" | "awaiting";
  calls: number;
  /** Statements of the run (claim, settle, ...) with the body reporting nothing. */
  baseline: number;
  /** The same run with the body calling progress() `calls` times. */
  reporting: number;
  /** reporting - baseline: what the progress() calls cost. */
  progressStatements: number;
  bodyMs: number;
}

const CALLS = 10_000;

/** Counts the statements of one runOnce of one job, quiet and then reporting, on `driver`. */
export async function progressLoopStatements(driver: AkadzeDriver, loop: "tight" | "awaiting"): Promise<ProgressLoopRow> {
  const target = await openAkadze(driver, `progress_${loop}`);
  try {
    const counter = target.counter;
    if (counter === null) throw new Error(`no statement counter on ${driver}`);
    const app = createApp();
    let bodyMs = 0;
    const quiet = app.task("quiet", async () => ({ calls: 0 }));
    const reporting = app.task("reporting", async (_args, job) => {
      const started = performance.now();
      for (let i = 1; i <= CALLS; i++) {
        job.progress({ done: i, of: CALLS });
        if (loop === "awaiting") await new Promise((resolve) => setImmediate(resolve));
      }
      bodyMs = performance.now() - started;
      return { calls: CALLS };
    });
    const statementsOf = async (task: typeof quiet) => {
      const id = await task.using(target.db).enqueue({});
      counter.reset();
      const summary = await runOnce(app, { db: target.db });
      if (summary.succeeded !== 1) throw new Error(`the ${task.name} job did not succeed`);
      return { id, statements: counter.statements };
    };
    await statementsOf(quiet); // (the first run also checks the schema and registers the app: not counted)
    const baseline = await statementsOf(quiet);
    const measured = await statementsOf(reporting);
    const stored = (await getJob(target.db, measured.id))?.progress as { done: number } | null;
    if (stored?.done !== CALLS) throw new Error(`the stored progress is ${JSON.stringify(stored)}, not the last one reported`);
    return { driver, loop, calls: CALLS, baseline: baseline.statements, reporting: measured.statements, progressStatements: measured.statements - baseline.statements, bodyMs };
  } finally {
    await target.close();
  }
}
