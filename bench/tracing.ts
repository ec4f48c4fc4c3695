// Tracing (issue 39, item 1): burn-down throughput of no-op jobs with tracing off, and on: through the global
// no-op provider (the app passes `openTelemetry()` but registered no SDK: every span is non-recording), and
// through an SDK that records every span (a batch processor, an exporter that drops what it is given). The
// modes alternate in rounds over one database per mode; each round enqueues under a span, so traced jobs carry
// a context to link to. The median round is reported.
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { createApp, type App, type Task } from "../src/index.js";
import { openTelemetry } from "../src/otel/index.js";
import { drain, enqueueNoops, type BurnDownShape } from "./akadze.js";
import { openAkadze, type AkadzeDriver } from "./akadze-db.js";
import { rate, timed } from "./stats.js";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { context } from "@opentelemetry/api";

export const TRACING_MODES = ["off", "on, no SDK", "on, recording"] as const;
export type TracingMode = (typeof TRACING_MODES)[number];

export interface TracingThroughput {
  driver: AkadzeDriver;
  mode: TracingMode;
  jobs: number;
  rounds: number;
  /** The median round's jobs per second of processing. */
  processPerSec: number;
  /** Spans the recording SDK was given over every round (null for the other modes). */
  spans: number | null;
}

/** An exporter that only counts: the cost measured is akadze's and the SDK's, not an export's. */
class CountingExporter implements SpanExporter {
  spans = 0;
  export(spans: ReadableSpan[], done: (result: { code: 0 }) => void): void { this.spans += spans.length; done({ code: 0 }); }
  async shutdown(): Promise<void> {}
}

function appFor(mode: TracingMode, provider: BasicTracerProvider): { app: App; noop: Task } {
  const tracing = mode === "off" ? undefined : mode === "on, no SDK" ? openTelemetry() : openTelemetry({ tracerProvider: provider });
  const app = createApp({ tracing });
  return { app, noop: app.task("bench.noop", async () => {}) };
}

/** `rounds` alternating burn-downs of `jobs` jobs per mode over `driver`. */
export async function tracingThroughput(driver: AkadzeDriver, jobs: number, rounds: number, shape: BurnDownShape): Promise<TracingThroughput[]> {
  // What a Node SDK registers: without it no span would be active around the enqueue, and no run would have a link.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const exporter = new CountingExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 65_536, maxExportBatchSize: 4_096 })] });
  const enqueuer = provider.getTracer("bench");
  const targets = await Promise.all(TRACING_MODES.map((mode) => openAkadze(driver, `otel${TRACING_MODES.indexOf(mode)}`)));
  const rates = new Map<TracingMode, number[]>(TRACING_MODES.map((m) => [m, []]));
  try {
    for (let round = 0; round < rounds; round++) {
      for (const [i, mode] of TRACING_MODES.entries()) {
        const { app, noop } = appFor(mode, provider);
        const db = targets[i].db;
        await enqueuer.startActiveSpan("enqueue", async (span) => { try { await enqueueNoops(noop, db, jobs); } finally { span.end(); } });
        let succeeded = 0;
        const { ms } = await timed(async () => { succeeded = (await drain(app, db, shape)).succeeded; });
        if (succeeded !== jobs) throw new Error(`tracing bench (${mode}): ${succeeded} of ${jobs} jobs ran`);
        rates.get(mode)!.push(rate(jobs, ms));
      }
    }
    await provider.forceFlush();
  } finally {
    await provider.shutdown();
    for (const target of targets) await target.close();
  }
  return TRACING_MODES.map((mode) => ({
    driver, mode, jobs, rounds, processPerSec: median(rates.get(mode)!), spans: mode === "on, recording" ? exporter.spans : null,
  }));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// `npx tsx bench/tracing.ts [jobs] [rounds] [driver,driver]`: this section alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  const jobs = Number(process.argv[2] ?? 5000);
  const rounds = Number(process.argv[3] ?? 3);
  const drivers = (process.argv[4] ?? "node-postgres").split(",") as AkadzeDriver[];
  for (const driver of drivers) {
    for (const r of await tracingThroughput(driver, jobs, rounds, { loops: 1, batchSize: 500, slots: 50 })) {
      console.log(`${driver}, tracing ${r.mode}: ${Math.round(r.processPerSec)} jobs/s (median of ${r.rounds} rounds of ${r.jobs})${r.spans === null ? "" : `, ${r.spans} spans recorded`}`);
    }
  }
}
