// Tracing in real workerd over neon-http (issue 39, item 1): an edge route enqueues inside a span of its own, a
// cron tick runs the jobs, and the Worker's in-memory exporter shows each run linked to that span, the
// workflow's steps as children of its run, and the failed attempt as an error (test/fixtures/tracing-worker.ts).
import { afterAll, beforeAll, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Miniflare } from "miniflare";
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { createTestDatabase } from "../support/postgres.js";
import { bundleWithWrangler, startWorkerd, type WorkerdHarness } from "../support/workerd.js";
import type { SpanRecord } from "../support/otel.js";

const CONFIG = fileURLToPath(new URL("../fixtures/tracing-wrangler.toml", import.meta.url));
let outdir: string;
let harness: WorkerdHarness | undefined;
let mf: Miniflare;

beforeAll(async () => {
  outdir = await mkdtemp(join(tmpdir(), "akadze-tracing-worker-"));
  const [, database] = await Promise.all([bundleWithWrangler(outdir, CONFIG), createTestDatabase("otel_workerd")]);
  harness = await startWorkerd({ scriptPath: join(outdir, "tracing-worker.js"), modulesRoot: outdir, database, secret: "s", setup: async () => {} });
  mf = harness.mf;
}, 120_000);
afterAll(async () => {
  await harness?.close();
  if (outdir) await rm(outdir, { recursive: true, force: true });
});

it("a cron tick's runs link to the edge route's span that enqueued them, with the workflow's steps as children", async () => {
  const res = await mf.dispatchFetch("http://worker/orders", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ orderId: 7 }) });
  expect(res.status).toBe(201);
  const checkout = await res.json() as { ship: number; flaky: number; traceId: string; spanId: string };
  const stored = (await harness!.pool.query("select id, trace_context from akadze.jobs order by id")).rows;
  expect(stored.map((r) => r.trace_context.traceparent)).toEqual([`00-${checkout.traceId}-${checkout.spanId}-01`, `00-${checkout.traceId}-${checkout.spanId}-01`]);

  const worker = await mf.getWorker() as unknown as { scheduled(options: { cron: string }): Promise<{ outcome: string }> };
  expect((await worker.scheduled({ cron: "* * * * *" })).outcome).toBe("ok");
  const spans = await (await mf.dispatchFetch("http://worker/spans")).json() as SpanRecord[];
  const named = (name: string) => spans.filter((s) => s.name === name);

  const [invocation] = named("akadze invocation");
  const [run] = named("process order.ship");
  expect(run.kind).toBe(SpanKind.CONSUMER);
  expect(run.parentSpanId).toBe(invocation.spanId);
  expect(run.links.map((l) => [l.traceId, l.spanId])).toEqual([[checkout.traceId, checkout.spanId]]);
  expect(run.attributes).toMatchObject({ "akadze.task": "order.ship", "akadze.job.id": checkout.ship, "akadze.job.attempt": 1, "akadze.job.outcome": "succeeded" });
  expect(named("step charge")[0].parentSpanId).toBe(run.spanId);
  expect(named("step notify")[0].parentSpanId).toBe(run.spanId);
  expect(named("send email")[0].parentSpanId).toBe(named("step notify")[0].spanId);

  const [failed] = named("process vendor.call");
  expect(failed.links.map((l) => l.spanId)).toEqual([checkout.spanId]);
  expect(failed.status).toEqual({ code: SpanStatusCode.ERROR, message: "the vendor said no" });
  expect(failed.attributes).toMatchObject({ "akadze.job.outcome": "error", "error.type": "TypeError" });

  expect(spans.filter((s) => s.attributes["messaging.operation.name"] === "claim").every((s) => s.parentSpanId === invocation.spanId)).toBe(true);
  expect(spans.some((s) => s.attributes["messaging.operation.name"] === "settle" && s.parentSpanId === invocation.spanId)).toBe(true);
}, 60_000);
