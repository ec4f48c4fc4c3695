// An OpenTelemetry SDK for tests, in memory: a tracer provider whose finished spans a test reads, and the context
// manager on AsyncLocalStorage (what a Node SDK registers; on Workers it needs nodejs_compat) so the span active
// around an enqueue is seen through its awaits. Shared by test/otel/tracing.test.ts, the workerd fixture and the bench.
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";

/** A provider exporting to memory, with the context manager registered (once per process). */
export function inMemoryTracing(): { provider: BasicTracerProvider; exporter: InMemorySpanExporter } {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { provider, exporter };
}

/** A finished span as plain JSON (what the workerd fixture sends the test). */
export interface SpanRecord {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  attributes: Record<string, unknown>;
  status: { code: number; message?: string };
  events: string[];
}

export function recordOf(span: ReadableSpan): SpanRecord {
  const own = span.spanContext();
  return {
    name: span.name, kind: span.kind, traceId: own.traceId, spanId: own.spanId, parentSpanId: span.parentSpanContext?.spanId ?? null,
    links: span.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId, attributes: { ...l.attributes } })),
    attributes: { ...span.attributes }, status: { ...span.status }, events: span.events.map((e) => e.name),
  };
}
