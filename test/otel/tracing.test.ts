// Tracing (issue 39, item 1): the trace context around an enqueue is stored with the job, and the run's span
// links to it; a workflow's steps are children of their run; claims and settles are spans of the invocation;
// a failed attempt is an error span. On every driver, with an in-memory exporter (test/support/otel.ts).
import { afterAll, beforeEach, expect, it } from "vitest";
import { sql } from "drizzle-orm";
import * as v from "valibot";
import { SpanKind, SpanStatusCode, trace, type Span, type Tracer } from "@opentelemetry/api";
import { AlwaysOffSampler, BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { createApp, getJob, jobIdsOf, requeue, runAtomically, runOnce, type FanOutOptions, type SiblingRequest } from "../../src/index.js";
import { carrierOf, openTelemetry, spanContextOf } from "../../src/otel/index.js";
import { Hono } from "hono";
import { akadzeRoutes, ownUrl } from "../../src/edge/hono.js";
import { forEachDriver } from "../support/drivers.js";
import { waitFor } from "../support/wait-for.js";
import { ManualClock } from "../support/clock.js";
import { inMemoryTracing, recordOf, type SpanRecord } from "../support/otel.js";

const { provider, exporter } = inMemoryTracing();
const tracer = provider.getTracer("the app");
afterAll(async () => { await provider.shutdown(); });

/** Runs `fn` inside a span of the app's own (a request's, say), ended after it; answers the span's ids. */
async function inSpan(name: string, fn: () => Promise<unknown>): Promise<{ traceId: string; spanId: string }> {
  return tracer.startActiveSpan(name, async (span: Span) => {
    try { await fn(); } finally { span.end(); }
    return span.spanContext();
  });
}

const spans = (): SpanRecord[] => exporter.getFinishedSpans().map(recordOf);
const named = (name: string) => spans().filter((s) => s.name === name);

it("a stored trace context reads back as the span context it was written from; a malformed one as none", () => {
  const carrier = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "vendor=abc,other=1" };
  const span = spanContextOf(carrier)!;
  expect(span).toMatchObject({ traceId: "0af7651916cd43dd8448eb211c80319c", spanId: "b7ad6b7169203331", traceFlags: 1, isRemote: true });
  expect(carrierOf(span)).toEqual(carrier);
  for (const traceparent of ["", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
    "00-00000000000000000000000000000000-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra"]) {
    expect(spanContextOf({ traceparent }), traceparent).toBeNull();
  }
  expect(spanContextOf(null)).toBeNull();
  expect(spanContextOf({ traceparent: 42 } as never)).toBeNull();
});

forEachDriver((h) => {
  beforeEach(() => { exporter.reset(); });
  const invoke = (app: ReturnType<typeof createApp>, clock: ManualClock) => runOnce(app, { db: h().db, now: clock.now, budget: "1h" });

  it("a run's span links to the span that enqueued its job in a transaction, as a child of its invocation", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now, tracing: openTelemetry({ tracerProvider: provider }) });
    const send = app.task("mail.send", { args: v.object({ to: v.string() }), queue: "mail" }, async ({ to }) => ({ sent: to }));
    let id = 0;
    const checkout = await inSpan("checkout", async () => {
      const [, inserted] = await runAtomically(h().db, (tx) => [tx.execute(sql`select 1`), send.using(tx).enqueueQuery({ to: "ada" })]);
      [id] = jobIdsOf(inserted);
    });
    expect((await getJob(h().db, id))?.traceContext).toEqual({ traceparent: `00-${checkout.traceId}-${checkout.spanId}-01` });

    await invoke(app, clock);
    const [run] = named("process mail.send");
    const [invocation] = named("akadze invocation");
    expect(run.kind).toBe(SpanKind.CONSUMER);
    expect(run.links).toEqual([{ traceId: checkout.traceId, spanId: checkout.spanId, attributes: {} }]);
    // Its parent is the invocation that ran it (the enqueue is another trace's past).
    expect(run.parentSpanId).toBe(invocation.spanId);
    expect(run.traceId).toBe(invocation.traceId);
    expect(run.attributes).toMatchObject({
      "messaging.system": "akadze", "messaging.operation.type": "process", "messaging.destination.name": "mail",
      "messaging.message.id": String(id), "akadze.task": "mail.send", "akadze.job.id": id, "akadze.job.attempt": 1, "akadze.job.outcome": "succeeded",
    });
    expect(run.status.code).toBe(SpanStatusCode.UNSET);
    // The claim that took it and the settle that recorded it are spans of the same invocation.
    const claims = spans().filter((s) => s.attributes["messaging.operation.name"] === "claim");
    const settles = spans().filter((s) => s.attributes["messaging.operation.name"] === "settle");
    expect(claims.every((s) => s.parentSpanId === invocation.spanId && s.kind === SpanKind.CONSUMER)).toBe(true);
    expect(claims.map((s) => s.attributes["messaging.batch.message_count"])).toContain(1);
    expect(settles.every((s) => s.parentSpanId === invocation.spanId)).toBe(true);
    expect(settles.map((s) => s.attributes["messaging.batch.message_count"])).toContain(1);
    expect(invocation.attributes).toMatchObject({ "akadze.invocation.succeeded": 1 });
    // The job keeps its context in the history.
    expect((await h().rows(`select trace_context from akadze.job_history where id = ${id}`))[0].trace_context.traceparent).toContain(checkout.traceId);
  });

  it("a workflow's steps are children of its run, and a child job's run links to the step that started it", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now, tracing: openTelemetry({ tracerProvider: provider }) });
    const label = app.task("label.print", async () => "label-1");
    const order = app.workflow("order.ship", { args: v.object({ orderId: v.number() }) }, async ({ orderId }, step) => {
      const charged = await step.run("charge", () => `ch-${orderId}`);
      const printed = await step.invoke("label", label, {});
      // The app's own span inside a step is the step's child.
      await step.run("notify", () => tracer.startActiveSpan("send email", (span: Span) => { span.end(); return "sent"; }));
      return { charged, printed };
    });
    const checkout = await inSpan("checkout", () => order.using(h().db).enqueue({ orderId: 7 }));
    for (let i = 0; i < 4 && named("step notify").length === 0; i++) { await invoke(app, clock); clock.advance(10_000); }

    const runs = named("process order.ship");
    expect(runs.length).toBeGreaterThanOrEqual(2); // parked on its child, then run again
    for (const run of runs) expect(run.links.map((l) => l.spanId)).toEqual([checkout.spanId]);
    const [charge] = named("step charge");
    const [start] = named("step label");
    const [notify] = named("step notify");
    expect(charge.parentSpanId).toBe(runs[0].spanId);
    expect(start.parentSpanId).toBe(runs[0].spanId);
    expect(notify.parentSpanId).toBe(runs.at(-1)!.spanId);
    expect(charge.attributes).toMatchObject({ "akadze.step.name": "charge", "akadze.step.kind": "run", "akadze.step.attempt": 1 });
    // A replayed step (charge, on the second run) ran nothing and has no span of its own.
    expect(named("step charge")).toHaveLength(1);
    expect(named("send email")[0].parentSpanId).toBe(notify.spanId);
    const [child] = named("process label.print");
    expect(child.links.map((l) => l.spanId)).toEqual([start.spanId]);
  });

  it("a failed attempt ends its run's span as an error", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now, tracing: openTelemetry({ tracerProvider: provider }) });
    const flaky = app.task("vendor.call", { maxAttempts: 2 }, async () => { throw new TypeError("the vendor said no"); });
    await flaky.using(h().db).enqueue({});
    await invoke(app, clock);
    const [run] = named("process vendor.call");
    expect(run.status).toEqual({ code: SpanStatusCode.ERROR, message: "the vendor said no" });
    expect(run.attributes).toMatchObject({ "akadze.job.outcome": "error", "error.type": "TypeError", "akadze.job.attempt": 1 });
    expect(run.events).toEqual(["exception"]);
  });

  it("a failed job keeps its context in the dead letters and back: its run after a requeue links to the first enqueue", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now, tracing: openTelemetry({ tracerProvider: provider }) });
    let fail = true;
    const task = app.task("once.more", { maxAttempts: 1 }, async () => { if (fail) throw new Error("not yet"); return "ok"; });
    let id = 0;
    const request = await inSpan("request", async () => { id = await task.using(h().db).enqueue({}); });
    await invoke(app, clock);
    expect((await h().rows(`select trace_context from akadze.failed_jobs where id = ${id}`))[0].trace_context.traceparent).toContain(request.spanId);
    fail = false;
    await requeue(h().db, id);
    await invoke(app, clock);
    const runs = named("process once.more");
    expect(runs.map((r) => r.attributes["akadze.job.outcome"])).toEqual(["error", "succeeded"]) // its last attempt failed: the job ended failed;
    expect(runs.map((r) => r.links[0]?.spanId)).toEqual([request.spanId, request.spanId]);
  });

  it("a debounced job keeps its first payload's context", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now, tracing: openTelemetry({ tracerProvider: provider }) });
    const reindex = app.debounced("search.reindex", { args: v.object({ doc: v.number() }), window: "5s" }, async () => {});
    let id = 0;
    const first = await inSpan("first", async () => { id = await reindex.using(h().db, { key: "docs" }).enqueue({ doc: 1 }); });
    await inSpan("second", async () => { expect(await reindex.using(h().db, { key: "docs" }).enqueue({ doc: 2 })).toBe(id); });
    clock.advance(6_000);
    await invoke(app, clock);
    expect(named("process search.reindex")[0].links.map((l) => l.spanId)).toEqual([first.spanId]);
  });

  it("an app created without tracing stores no context and starts no span, even inside an active span", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const task = app.task("quiet", async () => "ok");
    let id = 0;
    await inSpan("request", async () => { id = await task.using(h().db).enqueue({}); });
    exporter.reset();
    expect((await getJob(h().db, id))?.traceContext).toBeNull();
    expect((await invoke(app, clock)).succeeded).toBe(1);
    expect(spans()).toEqual([]);
  });

  it("an invocation whose span is not recorded (sampled out) starts no span for its claims, settles and runs, and runs its jobs", async () => {
    const clock = new ManualClock();
    const dropping = new BasicTracerProvider({ sampler: new AlwaysOffSampler() }).getTracer("akadze");
    const started: string[] = [];
    const counting: Tracer = {
      startSpan: (name, options, ctx) => { started.push(name); return dropping.startSpan(name, options, ctx); },
      startActiveSpan: dropping.startActiveSpan.bind(dropping) as Tracer["startActiveSpan"],
    };
    const app = createApp({ clock: clock.now, tracing: openTelemetry({ tracer: counting }) });
    const task = app.task("sampled.out", async () => "ok");
    let id = 0;
    await inSpan("request", async () => { id = await task.using(h().db).enqueue({}); });
    expect((await invoke(app, clock)).succeeded).toBe(1);
    expect(started).toEqual(["akadze invocation"]);
    expect((await getJob(h().db, id))?.state).toBe("succeeded");
  });

  it("a job enqueued outside any span runs in a span with no link", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now, tracing: openTelemetry({ tracerProvider: provider }) });
    const task = app.task("cron.like", async () => "ok");
    const id = await task.using(h().db).enqueue({});
    expect((await getJob(h().db, id))?.traceContext).toBeNull();
    await invoke(app, clock);
    expect(named("process cron.like")[0].links).toEqual([]);
    expect(trace.getActiveSpan()).toBeUndefined();
  });
});

forEachDriver((h) => {
  beforeEach(() => { exporter.reset(); });

  it("a sibling started by fan-out is an invocation span linked to the invocation that started it", async () => {
    const app = createApp({ tracing: openTelemetry({ tracerProvider: provider }) });
    const slow = app.task("fan.slow", async () => { await new Promise((resolve) => setTimeout(resolve, 20)); }); // the job's own work
    await slow.using(h().db).enqueueMany(Array.from({ length: 40 }, () => ({})));
    const started: SiblingRequest[] = [];
    const fanOut: FanOutOptions = {
      maxInvocations: 3,
      invoke: (r) => {
        started.push(r);
        return runOnce(app, { db: h().db, id: r.id, slots: r.slots, batchSize: r.batchSize, budget: r.budgetMs,
          fanOut: { ...fanOut, ticket: { chain: r.chain, generation: r.generation, ...(r.trace ? { trace: r.trace } : {}) } } });
      },
    };
    const tick = await runOnce(app, { db: h().db, slots: 2, batchSize: 4, budget: "2m", fanOut });
    expect(started.length).toBeGreaterThan(0);
    const invocations = named("akadze invocation");
    const starter = invocations.find((s) => s.attributes["akadze.invocation.id"] === tick.id)!;
    expect(started[0].trace?.traceparent).toBe(`00-${starter.traceId}-${starter.spanId}-01`);
    const sibling = invocations.find((s) => s.attributes["akadze.invocation.id"] === started[0].id)!;
    expect(sibling.links).toEqual([{ traceId: starter.traceId, spanId: starter.spanId, attributes: { "akadze.link": "started_by" } }]);
  });

  it("a sibling started through the work route (ownUrl) gets the starter's context in its ticket and links to it", async () => {
    const app = createApp({ tracing: openTelemetry({ tracerProvider: provider }) });
    const slow = app.task("fan.route", async () => { await new Promise((resolve) => setTimeout(resolve, 20)); }); // the job's own work
    await slow.using(h().db).enqueueMany(Array.from({ length: 40 }, () => ({})));
    const started: SiblingRequest[] = [];
    const web: Hono = new Hono().route("/akadze", akadzeRoutes(app, {
      db: h().db, secret: "s", log: "silent",
      fanOut: () => ({
        maxInvocations: 3,
        invoke: (r) => { started.push(r); return ownUrl("http://app/akadze/work", { secret: "s", fetch: async (input, init) => web.fetch(new Request(input, init)) })(r); },
      }),
    }));
    const res = await web.fetch(new Request("http://app/akadze/work", {
      method: "POST", headers: { authorization: "Bearer s", "content-type": "application/json" }, body: JSON.stringify({ slots: 2, batchSize: 4, budget: 20_000 }),
    }));
    const tick = await res.json() as { id: string };
    expect(res.status, JSON.stringify(tick)).toBe(200);
    expect(started.length).toBeGreaterThan(0);
    const invocation = (id: string) => named("akadze invocation").find((s) => s.attributes["akadze.invocation.id"] === id);
    await waitFor(() => started.every((r) => invocation(r.id) !== undefined), "every detached sibling's invocation to end");
    const starter = invocation(tick.id)!;
    expect(invocation(started[0].id)!.links).toEqual([{ traceId: starter.traceId, spanId: starter.spanId, attributes: { "akadze.link": "started_by" } }]);
    expect(await h().rows("select count(*)::int as n from akadze.jobs")).toEqual([{ n: 0 }]);
  });
}, ["node-postgres"]);
