// Valibot schemas of what akadze's routes accept. Queries arrive as strings, so counts and
// durations accept their string spelling too; JSON bodies may use numbers.
import * as v from "valibot";
import type { Context } from "hono";
import { DurationSchema } from "../core/duration.js";
import { CountSchema, JobIdSchema, MAX_BATCH_SIZE, MAX_SLOTS, MAX_TIMER_MS, NameSchema } from "../core/validate.js";
import { RouteProblem } from "./problems.js";

/** A whole number from 1 to `max`, given as a JSON number or as digits in a query. @example v.optional(CountParam("limit", 1000)) */
export const CountParam = (what: string, max: number) => v.pipe(
  v.union([v.number(), v.pipe(v.string(), v.regex(/^\d+$/, `${what} must be a whole number`), v.transform(Number))],
    `${what} must be a whole number`),
  CountSchema(what, max),
);

const QueueList = v.pipe(
  v.union([v.string(), v.array(v.string())], "queues must be a queue name, a comma-separated list or an array of names"),
  v.transform((value) => (Array.isArray(value) ? value : [value]).flatMap((s) => s.split(",")).map((s) => s.trim())),
  v.check((names) => names.length > 0 && names.every((n) => n.length > 0), "queues must not contain an empty name"),
  v.array(NameSchema),
);

// A bare number in a query string means milliseconds, as a Duration number does.
const Budget = v.pipe(
  v.unknown(),
  v.transform((value) => (typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value)),
  DurationSchema,
  v.minValue(1, "budget must be longer than zero"),
  v.maxValue(MAX_TIMER_MS, `budget must be at most ${MAX_TIMER_MS} ms`),
);

/** `POST /work`: which queues, how many jobs at once and in all, and the wall-time budget (ms once parsed). */
export const WorkRequest = v.strictObject({
  queues: v.optional(QueueList),
  slots: v.optional(CountParam("slots", MAX_SLOTS)),
  batchSize: v.optional(CountParam("batchSize", MAX_BATCH_SIZE)),
  budget: v.optional(Budget),
  /** `false` (or "false" in a query): exactly one batch instead of working the whole budget. */
  drain: v.optional(v.union([v.boolean(), v.pipe(v.picklist(["true", "false"], "drain is true or false"), v.transform((s) => s === "true"))], "drain is true or false")),
  /** Set by fan-out when it starts this invocation: the name its slot is held in, and its chain (see SiblingRequest). */
  fanOut: v.optional(v.strictObject({
    id: NameSchema,
    chain: NameSchema,
    generation: v.pipe(v.number("generation must be a number"), v.integer("generation must be a whole number"), v.minValue(0, "generation must not be negative")),
    /** The starter's trace context, when its app traces: this invocation's span links to it. */
    trace: v.optional(v.strictObject({
      traceparent: v.pipe(v.string("trace.traceparent must be a string"), v.maxLength(128, "trace.traceparent is too long")),
      tracestate: v.optional(v.pipe(v.string("trace.tracestate must be a string"), v.maxLength(512, "trace.tracestate is at most 512 characters"))),
    }, "fanOut.trace must be { traceparent, tracestate? }")),
  }, "fanOut must be { id, chain, generation, trace? }")),
  /** With `fanOut`: answer 202 once accepted and run on after the response (the `ownUrl` adapter asks for it). */
  detach: v.optional(v.boolean("detach must be true or false")),
});

export type WorkRequest = v.InferOutput<typeof WorkRequest>;

/** A job id as text (a path, a query): digits only, so `abc` or `-1` are a 400, not a 404; then the one job id rule (above 2^53 - 1 is refused, never rounded). */
export const JobIdParam = v.pipe(v.string(), v.regex(/^[1-9]\d*$/, "a job id is a positive whole number"), v.transform(Number), JobIdSchema);

/** The fields of a query string; a repeated key becomes an array (`?queues=a&queues=b`). */
export function queryObject(url: URL): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const values = url.searchParams.getAll(key);
    out[key] = values.length === 1 ? values[0] : values;
  }
  return out;
}

/** The JSON body as an object, `{}` when there is none; malformed JSON is a 400. */
export async function jsonBody(c: Context): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (text.trim() === "") return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (error) {
    throw new RouteProblem(400, "malformed_json", `the request body is not JSON: ${(error as Error).message}`);
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new RouteProblem(400, "invalid_request", "the request body must be a JSON object");
  }
  return body as Record<string, unknown>;
}
