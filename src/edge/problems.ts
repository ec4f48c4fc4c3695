// How akadze's routes say no: one error class carrying an HTTP status, rendered as JSON.
import * as v from "valibot";
import { AkadzeError, DuplicateJob, InvalidInput } from "../core/errors.js";

/** One problem with a request, as the JSON body of an error response. */
export interface ProblemBody {
  error: { code: string; message: string; issues?: { path: string | null; message: string }[]; [more: string]: unknown };
}

/**
 * A request akadze's routes refuse: its status, a stable `code` and a sentence.
 * @example throw new RouteProblem(404, "not_found", `job ${id} does not exist`);
 */
export class RouteProblem extends AkadzeError {
  constructor(readonly status: 400 | 401 | 404 | 409 | 500, readonly code: string, message: string, readonly extra: Record<string, unknown> = {}) {
    super(message);
  }
}

/** Parses with valibot; a failure is a 400 listing each issue with its path. */
export function parseRequest<S extends v.GenericSchema>(schema: S, input: unknown, what: string): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  const issues = result.issues.map((issue) => ({ path: v.getDotPath(issue), message: issue.message }));
  const summary = issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ");
  throw new RouteProblem(400, "invalid_request", `Invalid ${what}: ${summary}`, { issues });
}

/** The status and JSON body for any error a route threw. */
export function problemOf(error: unknown): { status: number; body: ProblemBody } {
  if (error instanceof RouteProblem) {
    return { status: error.status, body: { error: { code: error.code, message: error.message, ...error.extra } } };
  }
  if (error instanceof DuplicateJob) return { status: 409, body: { error: { code: "duplicate_job", message: error.message } } };
  if (error instanceof InvalidInput) {
    // parseOrThrow keeps valibot's issues as the cause: give them as `issues`, like parseRequest does.
    const issues = Array.isArray(error.cause)
      ? error.cause.map((issue: v.BaseIssue<unknown>) => ({ path: v.getDotPath(issue), message: issue.message }))
      : undefined;
    return { status: 400, body: { error: { code: "invalid_request", message: error.message, ...(issues ? { issues } : {}) } } };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { status: 500, body: { error: { code: "internal_error", message } } };
}
