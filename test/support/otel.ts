// An OpenTelemetry SDK for tests, in memory: a tracer provider whose finished spans a test reads, and a context
// manager on AsyncLocalStorage (what an app's SDK registers on Node; on Workers, with nodejs_compat) so the
// span active around an enqueue is seen through its awaits. Shared by test/tracing.test.ts and the workerd fixture.
import { AsyncLocalStorage } from "node:async_hooks";
import { context, ROOT_CONTEXT, type Context, type ContextManager } from "@opentelemetry/api";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";

/** The active context kept in AsyncLocalStorage. */
export class StoredContextManager implements ContextManager {
  private readonly storage = new AsyncLocalStorage<Context>();

  active(): Context {
    return this.storage.getStore() ?? ROOT_CONTEXT;
  }

  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    return this.storage.run(ctx, () => fn.apply(thisArg, args));
  }

  bind<T>(ctx: Context, target: T): T {
    if (typeof target !== "function") return target;
    const manager = this;
    return function (this: unknown, ...args: unknown[]) {
      return manager.with(ctx, () => (target as (...a: unknown[]) => unknown).apply(this, args));
    } as T;
  }

  enable(): this {
    return this;
  }

  disable(): this {
    this.storage.disable();
    return this;
  }
}

/** A provider exporting to memory, with the context manager registered (once per process). */
export function inMemoryTracing(): { provider: BasicTracerProvider; exporter: InMemorySpanExporter } {
  context.setGlobalContextManager(new StoredContextManager());
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
