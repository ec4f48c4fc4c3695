// Start order follows claim order within an invocation (issue 23): higher priority first, then the earliest
// due, then the oldest. Quick jobs of mixed priorities and due times, started by one invocation and by one
// worker lane, never start out of that order.
import { expect, it } from "vitest";
import * as v from "valibot";
import { createApp, runOnce } from "../../src/index.js";
import { runWorker } from "../../src/runtime/run-worker.js";
import { forEachDriver } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { waitFor } from "../support/wait-for.js";

/** Pairs of starts in the wrong order: a later start that claim order puts first. */
function inversions(started: { priority: number; due: number; id: number }[]): number {
  const before = (a: typeof started[0], b: typeof started[0]) => a.priority > b.priority || (a.priority === b.priority && (a.due < b.due || (a.due === b.due && a.id < b.id)));
  let n = 0;
  for (let i = 0; i < started.length; i++) for (let j = i + 1; j < started.length; j++) if (before(started[j], started[i])) n++;
  return n;
}

function orderApp(clock: ManualClock) {
  const app = createApp({ clock: clock.now });
  const started: { priority: number; due: number; id: number }[] = [];
  const task = app.task("order.quick", { args: v.object({ due: v.number() }) }, async ({ due }, job) => {
    started.push({ priority: (job as unknown as { priority?: number }).priority ?? 0, due, id: job.id });
  });
  return { app, task, started };
}

async function enqueueMixed(task: ReturnType<typeof orderApp>["task"], db: Parameters<typeof task.using>[0], clock: ManualClock, n: number): Promise<Map<number, number>> {
  const priorities = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const priority = (i * 7) % 5;
    const delay = ((i * 13) % 9) * 1000;
    const [id] = await task.using(db, { priority, delay }).enqueueMany([{ due: clock.now().getTime() + delay }]);
    priorities.set(id, priority);
  }
  clock.advance(10_000); // every job due
  return priorities;
}

forEachDriver((h) => {
  // Small batches against many slots too (docs/sizing.md recommends slots 4 with batch 5-10 on free Workers): each
  // claim's started jobs wait behind the earlier claim's jobs whose start is still to be asked or answered.
  for (const [n, batchSize, slots] of [[60, 50, 4], [200, 50, 4], [60, 10, 8], [60, 9, 8], [60, 12, 8], [60, 6, 4], [60, 5, 4], [30, 1, 2]]) {
    it(`${n} quick jobs of mixed priority and due time start in claim order within one invocation (batch ${batchSize}, slots ${slots}): 0 inversions`, async () => {
      const clock = new ManualClock();
      const { app, task, started } = orderApp(clock);
      const priorities = await enqueueMixed(task, h().db, clock, n);
      const summary = await runOnce(app, { db: h().db, now: clock.now, slots, batchSize });
      expect(summary.succeeded).toBe(n);
      const withPriority = started.map((s) => ({ ...s, priority: priorities.get(s.id)! }));
      expect(inversions(withPriority)).toBe(0);
    });
  }

  it("a worker lane starts its prefetched jobs in claim order too", async () => {
    const clock = new ManualClock();
    const { app, task, started } = orderApp(clock);
    const priorities = await enqueueMixed(task, h().db, clock, 200);
    const stop = new AbortController();
    const worker = runWorker(app, { db: h().db, now: clock.now, slots: 4, prefetch: 200, listen: false, signal: stop.signal });
    await waitFor(() => started.length === 200, "every job to start", { timeoutMs: 60_000 });
    stop.abort();
    await worker;
    expect(inversions(started.map((s) => ({ ...s, priority: priorities.get(s.id)! })))).toBe(0);
  });
}, ["node-postgres", "pglite"]);
