// How akadze's routes say no: one error class carrying an HTTP status, rendered as JSON.
import * as v from "valibot";
import { AkadzeError, DuplicateJob, DuplicateSchedule, InvalidInput } from "../core/errors.js";
import { postgresErrorOf } from "../core/error-causes.js";
import { describeIssues, issueList, type InputIssue } from "../core/validate.js";

/** One problem with a request, as the JSON body of an error response. */
export interface ProblemBody {
  error: { code: string; message: string; issues?: InputIssue[]; [more: string]: unknown };
}

/**
 * A request akadze's routes refuse: its status, a stable `code` and a sentence.
 * @example throw new RouteProblem(404, "not_found", `job ${id} does not exist`);
 */
export class RouteProblem extends AkadzeError {
  constructor(readonly status: 400 | 401 | 404 | 409 | 413 | 500, readonly code: string, message: string, readonly extra: Record<string, unknown> = {}) {
    super(message);
  }
}

/** Parses with valibot; a failure is a 400 listing each issue with its path. */
export function parseRequest<S extends v.GenericSchema>(schema: S, input: unknown, what: string): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  throw new RouteProblem(400, "invalid_request", `Invalid ${what}: ${describeIssues(result.issues)}`, { issues: issueList(result.issues) });
}

/** The sentence of every unexpected 500: what went wrong stays in the server log (it may hold SQL and its parameters). */
export const INTERNAL_ERROR_MESSAGE = "akadze could not complete the request; the server log has the details";

/**
 * The status and JSON body for any error a route threw. Input Postgres refuses (SQLSTATE class 22, data
 * exception, or 23, integrity violation) is a 400 with Postgres' own sentence; anything unexpected is a
 * 500 with a fixed sentence, never the failed SQL or its parameters.
 */
export function problemOf(error: unknown): { status: number; body: ProblemBody } {
  if (error instanceof RouteProblem) {
    return { status: error.status, body: { error: { code: error.code, message: error.message, ...error.extra } } };
  }
  if (error instanceof DuplicateJob) return { status: 409, body: { error: { code: "duplicate_job", message: error.message } } };
  if (error instanceof DuplicateSchedule) return { status: 409, body: { error: { code: "duplicate_schedule", message: error.message } } };
  if (error instanceof InvalidInput) {
    // parseOrThrow keeps valibot's issues as the cause: give them as `issues`, like parseRequest does.
    const issues = Array.isArray(error.cause) ? issueList(error.cause) : undefined;
    return { status: 400, body: { error: { code: "invalid_request", message: error.message, ...(issues ? { issues } : {}) } } };
  }
  const pg = postgresErrorOf(error);
  if (pg && /^2[23]/.test(pg.code)) {
    const reason = String(pg.message).split("\n")[0];
    return { status: 400, body: { error: { code: "invalid_input", message: `the database refused the input: ${reason}`, sqlstate: pg.code } } };
  }
  return { status: 500, body: { error: { code: "internal_error", message: INTERNAL_ERROR_MESSAGE } } };
}
