// Workflows (issue 26): N workflows of S no-op steps each, run by runOnce loops until a claim comes back
// empty. Two shapes: every workflow's steps in one run, and one step per run (the run yields after each
// step, as a workflow spanning invocations does). Statements counted by the driver (node-postgres) or as
// HTTP requests at the local Neon endpoint (neon-http), enqueue included.
import { createApp, runOnce } from "../src/index.js";
import { ENQUEUE_CHUNK } from "./akadze.js";
import { openAkadze, type AkadzeDriver } from "./akadze-db.js";

export interface WorkflowBench {
  driver: AkadzeDriver;
  shape: "all steps in one run" | "one step per run";
  workflows: number;
  steps: number;
  /** Steps run (each exactly once) per second of processing. */
  stepsPerSec: number;
  /** Statements (HTTP requests over neon-http) per step, enqueue and every claim, load, step and settle included. */
  statementsPerStep: number | null;
  /** runOnce invocations the loop made. */
  invocations: number;
  processMs: number;
}

/** Runs `workflows` workflows of `steps` steps over `driver`; throws if a step ran twice or a workflow did not succeed. */
export async function workflowBench(driver: AkadzeDriver, shape: WorkflowBench["shape"], workflows: number, steps: number,
  run: { batchSize: number; slots: number }): Promise<WorkflowBench> {
  const target = await openAkadze(driver, "wf");
  try {
    const app = createApp();
    let ran = 0;
    const names = Array.from({ length: steps }, (_, i) => `step-${i + 1}`);
    const flow = app.workflow("bench.flow", { minStepTime: shape === "one step per run" ? "100d" : "1ms" }, async (_args, step) => {
      for (const name of names) await step.run(name, () => { ran++; return name.length; });
    });
    const count = () => (driver === "neon-http" ? target.requests() : target.counter?.statements ?? null);
    const before = count();
    const args = Array.from({ length: workflows }, () => ({}));
    for (let i = 0; i < workflows; i += ENQUEUE_CHUNK) await flow.using(target.db).enqueueMany(args.slice(i, i + ENQUEUE_CHUNK));
    const started = performance.now();
    let invocations = 0;
    for (;;) {
      const summary = await runOnce(app, { db: target.db, batchSize: run.batchSize, slots: run.slots, budget: "1h" });
      invocations++;
      if (summary.claimed === 0) break;
    }
    const processMs = performance.now() - started;
    const after = count();
    if (ran !== workflows * steps) throw new Error(`workflow bench: ${ran} step runs for ${workflows} x ${steps} steps`);
    return {
      driver, shape, workflows, steps, stepsPerSec: ran / (processMs / 1000),
      statementsPerStep: before === null || after === null ? null : (after - before) / ran, invocations, processMs,
    };
  } finally {
    await target.close();
  }
}

// `npx tsx bench/workflows.ts [workflows] [driver,driver]`: this section alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  const workflows = Number(process.argv[2] ?? 1000);
  const drivers = (process.argv[3] ?? "neon-http,node-postgres").split(",") as AkadzeDriver[];
  for (const driver of drivers) {
    for (const shape of ["all steps in one run", "one step per run"] as const) {
      const r = await workflowBench(driver, shape, workflows, 5, { batchSize: 50, slots: 10 });
      console.log(`${driver}, ${shape}: ${r.workflows} workflows x ${r.steps} steps: ${Math.round(r.stepsPerSec)} steps/s, ` +
        `${r.statementsPerStep?.toFixed(3) ?? "-"} statements/step, ${r.invocations} invocations, ${Math.round(r.processMs)} ms`);
    }
  }
}
