// What akadze tells a tracer, in its own words: an enqueue's trace context to store, and the spans of an
// invocation (its claims, settles, runs and workflow steps). akadze knows no tracing library: `akadze/otel`
// implements this with @opentelemetry/api, and an app that passes no `tracing` to createApp loads nothing and
// pays one null check where a span would start.

/**
 * A W3C trace context as stored with a job (`akadze.jobs.trace_context`): what a propagator writes in the
 * `traceparent` and `tracestate` headers.
 * @example const carrier: TraceCarrier = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" };
 */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/** A run's end as its span records it: how, and the error that ended the attempt, if one did. */
export interface RunEnd {
  /**
   * The outcome the settle records (an `OutcomeKind`: succeeded, error, fail, cancel, snooze, release), or
   * `completed`: the body completed the job itself (`completeTx`, `completeBatch`).
   */
  outcome: string;
  error?: { kind: string; message: string; stack?: string | null } | null;
}

/**
 * The tracing an app was created with (`createApp({ tracing: openTelemetry() })`).
 * @example import { openTelemetry } from "akadze/otel"; const app = createApp({ tracing: openTelemetry() });
 */
export interface Tracing {
  /** The trace context active where an enqueue runs, stored with the jobs it inserts; null: no span is active. */
  capture(): TraceCarrier | null;
  /** An invocation (`runOnce`) or a worker lane starts: its claims, settles and runs are traced through what this returns. */
  engine(info: EngineTraceInfo): EngineTrace;
}

/** What a tracer is told of an engine as it starts. */
export interface EngineTraceInfo {
  /** The invocation's (or worker's) id. */
  id: string;
  /** An invocation has a span of its own, ended with its summary; a worker lane's spans hang off the context it started in. */
  kind: "invocation" | "worker";
  queues: string[] | null;
  /** The invocation that started this one by fan-out: its span is linked. */
  startedBy?: TraceCarrier | null;
}

/** The spans of one engine. */
export interface EngineTrace {
  /**
   * False when the invocation's own span is not recorded (no SDK is registered, or its sampler dropped it): then
   * nothing beneath it is traced, and its claims and runs cost what they cost untraced. Always true for a worker lane.
   */
  readonly recording: boolean;
  /** A claim statement is sent for up to `asked` jobs. */
  claim(asked: number): StatementTrace;
  /** A settle statement is sent with `outcomes` outcomes and `starts` jobs to start. */
  settle(outcomes: number, starts: number): StatementTrace;
  /** A claimed job's body starts: its run span, linked to the context it was enqueued in. */
  run(job: TracedJob): RunTrace;
  /** The invocation's own trace context (its siblings' spans link to it), or null. */
  carrier(): TraceCarrier | null;
  /** The invocation ended, with these counts (or failed with `error`). */
  end(counts: Record<string, number> | null, error?: unknown): void;
}

/** One statement's span: ended with how many jobs it took or moved, or the error it failed with. */
export interface StatementTrace {
  end(jobs: number, error?: unknown): void;
}

/** What a run's span says of its job. */
export interface TracedJob {
  id: number;
  task: string;
  queue: string;
  attempt: number;
  max_attempts: number;
  /** Where it was enqueued (null or absent: untraced, a schedule's, or enqueued before tracing was on). */
  trace?: TraceCarrier | null;
}

/** A span the app's code runs inside: a run, or a workflow step. */
export interface ScopeTrace {
  /** Runs `fn` with this span active, so the app's own spans (and the jobs it enqueues) are its children. */
  within<T>(fn: () => T): T;
  /** This span's context, stored with jobs started under it without the active context (a workflow's child jobs). */
  carrier(): TraceCarrier | null;
}

/** A run's span. */
export interface RunTrace extends ScopeTrace {
  /** A workflow step of this run executes (a replayed one does not): a child span. */
  step(name: string, kind: "run" | "jobs", attempt: number): StepTrace;
  end(end: RunEnd): void;
}

/** A workflow step's span: ended with the error the step threw, if any. */
export interface StepTrace extends ScopeTrace {
  end(error?: unknown): void;
}
