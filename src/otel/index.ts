// akadze/otel: akadze's tracing (core/tracing.ts) through @opentelemetry/api, an optional peer dependency that
// only this entry imports. An app that never imports it loads nothing of OpenTelemetry.
//
// The spans follow OpenTelemetry's messaging conventions: a run is a `process` span (CONSUMER) whose parent is
// the invocation that ran it and which LINKS to the context the job was enqueued in. A link, not a parent: a
// job runs minutes or days after its enqueue, once per attempt, in another invocation; as the enqueuer's child
// each retry would grow a trace that ended long ago and part from the invocation's own claim and settle spans.
// The conventions ask exactly this of process spans ("SHOULD link to the message's creation context").
import {
  context, SpanKind, SpanStatusCode, trace, createTraceState,
  type Attributes, type Context, type Link, type Span, type SpanContext, type Tracer, type TracerProvider,
} from "@opentelemetry/api";
import type {
  EngineTrace, EngineTraceInfo, RunEnd, RunTrace, StatementTrace, StepTrace, TraceCarrier, TracedJob, Tracing,
} from "../core/tracing.js";
import { Snooze } from "../core/errors.js";
import { StepParked } from "../workflow/errors.js";

export type { TraceCarrier, Tracing } from "../core/tracing.js";

/** Options of `openTelemetry`. @example openTelemetry({ tracerProvider: provider }) */
export interface OpenTelemetryOptions {
  /** The tracer akadze starts its spans with. Default: the `akadze` tracer of `tracerProvider`. */
  tracer?: Tracer;
  /** Where the default tracer comes from. Default: the global provider (the one your SDK registered). */
  tracerProvider?: TracerProvider;
}

/** The instrumentation's name: the tracer's, and `messaging.system` on every span. */
export const INSTRUMENTATION_NAME = "akadze";

/**
 * akadze's tracing through OpenTelemetry, for `createApp({ tracing })`: every enqueue stores the active trace
 * context with its jobs; every invocation is a span whose claims, settles and runs (linked to where each job
 * was enqueued) are its children, and a workflow's steps are children of their run (docs/observe.md#tracing).
 * @example
 * import { openTelemetry } from "akadze/otel";
 * export const app = createApp({ tracing: openTelemetry() });
 */
export function openTelemetry(options: OpenTelemetryOptions = {}): Tracing {
  const tracer = options.tracer ?? (options.tracerProvider ?? trace).getTracer(INSTRUMENTATION_NAME);
  return {
    capture: () => carrierOf(trace.getSpanContext(context.active())),
    engine: (info) => new EngineSpans(tracer, info),
  };
}

/** The W3C `traceparent` (and `tracestate`) of a span context; null for none or an invalid one. */
export function carrierOf(span: SpanContext | undefined): TraceCarrier | null {
  if (!span || !trace.isSpanContextValid(span)) return null;
  const traceparent = `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
  const tracestate = span.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The remote span context a stored carrier names; null when it is missing or malformed (a bad row never fails a run). */
export function spanContextOf(carrier: TraceCarrier | null | undefined): SpanContext | null {
  const match = typeof carrier?.traceparent === "string" ? TRACEPARENT.exec(carrier.traceparent) : null;
  // Version ff is invalid; a later version may add fields after ours (the `(-.*)?`), version 00 may not.
  if (!match || match[1] === "ff" || (match[1] === "00" && match[5] !== undefined)) return null;
  const span: SpanContext = { traceId: match[2], spanId: match[3], traceFlags: parseInt(match[4], 16), isRemote: true };
  if (typeof carrier?.tracestate === "string" && carrier.tracestate !== "") span.traceState = createTraceState(carrier.tracestate);
  return trace.isSpanContextValid(span) ? span : null;
}

const BASE: Attributes = { "messaging.system": INSTRUMENTATION_NAME };

/** The spans of one invocation (its own span and its statements' and runs') or of one worker lane. */
class EngineSpans implements EngineTrace {
  private readonly span: Span | null;
  readonly recording: boolean;
  /** What the statements' and runs' spans are children of. */
  private readonly parent: Context;
  private readonly destination: Attributes;

  constructor(private readonly tracer: Tracer, private readonly info: EngineTraceInfo) {
    const ambient = context.active();
    const queues = info.queues ?? [];
    this.destination = queues.length === 1 ? { "messaging.destination.name": queues[0] } : {};
    if (info.kind === "worker") {
      this.span = null;
      this.parent = ambient;
      this.recording = true;
      return;
    }
    const startedBy = spanContextOf(info.startedBy);
    this.span = tracer.startSpan("akadze invocation", {
      kind: SpanKind.INTERNAL,
      attributes: { ...BASE, "akadze.invocation.id": info.id, ...(info.queues ? { "akadze.invocation.queues": info.queues } : {}) },
      links: startedBy ? [{ context: startedBy, attributes: { "akadze.link": "started_by" } }] : [],
    }, ambient);
    this.parent = trace.setSpan(ambient, this.span);
    // Under a span that is not recorded the default samplers (parent-based) record none of its children either.
    this.recording = this.span.isRecording();
  }

  claim(asked: number): StatementTrace {
    return this.statement(this.tracer.startSpan(this.named("claim"), {
      kind: SpanKind.CONSUMER,
      attributes: {
        ...BASE, ...this.destination, "messaging.operation.name": "claim", "messaging.operation.type": "receive",
        "messaging.client.id": this.info.id, "akadze.claim.asked": asked,
      },
    }, this.parent));
  }

  settle(outcomes: number, starts: number): StatementTrace {
    return this.statement(this.tracer.startSpan(this.named("settle"), {
      kind: SpanKind.CLIENT,
      attributes: {
        ...BASE, ...this.destination, "messaging.operation.name": "settle", "messaging.operation.type": "settle",
        "messaging.client.id": this.info.id, "akadze.settle.outcomes": outcomes, "akadze.settle.starts": starts,
      },
    }, this.parent));
  }

  run(job: TracedJob): RunTrace {
    const enqueued = spanContextOf(job.trace);
    const links: Link[] = enqueued ? [{ context: enqueued }] : [];
    const span = this.tracer.startSpan(`process ${job.task}`, {
      kind: SpanKind.CONSUMER,
      links,
      attributes: {
        ...BASE, "messaging.operation.name": "process", "messaging.operation.type": "process",
        "messaging.destination.name": job.queue, "messaging.message.id": String(job.id), "messaging.client.id": this.info.id,
        "akadze.task": job.task, "akadze.job.id": job.id, "akadze.job.attempt": job.attempt, "akadze.job.max_attempts": job.max_attempts,
      },
    }, this.parent);
    return new RunSpan(this.tracer, span, trace.setSpan(this.parent, span));
  }

  carrier(): TraceCarrier | null {
    return this.span ? carrierOf(this.span.spanContext()) : null;
  }

  end(counts: Record<string, number> | null, error?: unknown): void {
    const span = this.span;
    if (!span) return;
    quietly(() => {
      for (const [name, n] of Object.entries(counts ?? {})) span.setAttribute(`akadze.invocation.${name}`, n);
      if (error !== undefined) markFailed(span, error);
    });
    quietly(() => span.end());
  }

  /** A statement's span name: its operation, and the queue when the engine claims from one. */
  private named(operation: string): string {
    const queue = this.destination["messaging.destination.name"];
    return queue === undefined ? operation : `${operation} ${String(queue)}`;
  }

  private statement(span: Span): StatementTrace {
    return {
      end: (jobs, error) => {
        quietly(() => {
          span.setAttribute("messaging.batch.message_count", jobs);
          if (error !== undefined) markFailed(span, error);
        });
        quietly(() => span.end());
      },
    };
  }
}

/** A span the app's code runs inside (a run, a step). */
class ScopeSpan {
  constructor(protected readonly tracer: Tracer, protected readonly span: Span, protected readonly ctx: Context) {}

  within<T>(fn: () => T): T {
    return context.with(this.ctx, fn);
  }

  carrier(): TraceCarrier | null {
    return carrierOf(this.span.spanContext());
  }
}

class RunSpan extends ScopeSpan implements RunTrace {
  step(name: string, kind: "run" | "jobs", attempt: number): StepTrace {
    const span = this.tracer.startSpan(`step ${name}`, {
      kind: SpanKind.INTERNAL,
      attributes: { ...BASE, "akadze.step.name": name, "akadze.step.kind": kind, "akadze.step.attempt": attempt },
    }, this.ctx);
    return new StepSpan(this.tracer, span, trace.setSpan(this.ctx, span));
  }

  end({ outcome, error }: RunEnd): void {
    quietly(() => {
      this.span.setAttribute("akadze.job.outcome", outcome);
      // A failed attempt (retried or not) is an error; a snooze, a cancel or a release is not.
      if (outcome === "error" || outcome === "fail") {
        const kind = error?.kind ?? "Error";
        this.span.setAttribute("error.type", kind);
        this.span.recordException({ name: kind, message: error?.message ?? outcome, ...(error?.stack ? { stack: error.stack } : {}) });
        this.span.setStatus({ code: SpanStatusCode.ERROR, message: error?.message ?? outcome });
      }
    });
    quietly(() => this.span.end());
  }
}

class StepSpan extends ScopeSpan implements StepTrace {
  end(error?: unknown): void {
    quietly(() => {
      // A park (a sleep, a snooze inside the step) is how a workflow waits, not a failure.
      if (error instanceof StepParked || error instanceof Snooze) this.span.setAttribute("akadze.step.parked", true);
      else if (error !== undefined) markFailed(this.span, error);
    });
    quietly(() => this.span.end());
  }
}

/** What akadze adds to a span never fails what it traces (a thrown value whose message throws, say). */
function quietly(record: () => void): void {
  try { record(); } catch { /* the span ends without it */ }
}

function markFailed(span: Span, error: unknown): void {
  const e = error instanceof Error ? error : new Error(String(error));
  span.setAttribute("error.type", e.name || "Error");
  span.recordException(e);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}
