import { InvalidInput } from "../core/errors.js";
import { causeChain, postgresErrorOf } from "../core/error-causes.js";
import { isMissingSchema, MIGRATE_HINT } from "../db/query.js";

/** A failure the CLI reports as one line and exit code 1. */
export class CliError extends Error {
  constructor(message: string, options?: { cause?: unknown; readonly exitCode?: number }) {
    super(message, options);
    this.name = "CliError";
    this.exitCode = options?.exitCode ?? 1;
  }
  readonly exitCode: number;
}

/** Bad input on the command line: one line and exit code 2, like any other usage error. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, { exitCode: 2 });
    this.name = "UsageError";
  }
}

/** An exit whose reason was already printed (by `akadze dev`'s child process): the code, and no line of its own. */
export class SaidExit extends CliError {
  constructor(exitCode: number) {
    super(`exit code ${exitCode}`, { exitCode });
    this.name = "SaidExit";
  }
}

const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host not found",
  ETIMEDOUT: "timed out",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ECONNRESET: "connection reset",
};

/** The exit code for an error: 2 for bad input, 1 for anything else. */
export function exitCodeOf(error: unknown): number {
  if (error instanceof CliError) return error.exitCode;
  if (causeChain(error).some((e) => e instanceof InvalidInput || e?.name === "InvalidInput")) return 2;
  return 1;
}

/**
 * One line that says what went wrong, for stderr: no stack, no SQL text. The database being unreachable,
 * missing tables and Postgres errors get their own sentences.
 */
export function describeError(error: unknown, where?: string): string {
  const errors = causeChain(error);
  if (isMissingSchema(error)) return MIGRATE_HINT;
  const network = errors.find((e) => typeof e?.code === "string" && e.code in NETWORK_CODES);
  if (network) return `cannot reach the database${where ? ` at ${where}` : ""}: ${NETWORK_CODES[network.code]} (${network.code})`;
  // akadze dev's Neon endpoint (the DATABASE_URL of .dev.vars) answers HTTP and WebSocket, not Postgres's
  // own protocol: node-postgres sees the connection closed at once.
  if (errors.some((e) => /^Connection terminated unexpectedly/.test(String(e?.message))) && !where?.endsWith("(over HTTP)")) {
    return `${where ?? "the database"} closed the connection at once: if it is \`akadze dev\`'s Neon endpoint (the DATABASE_URL in .dev.vars), ` +
      "it speaks Neon's HTTP protocol: add --http (NEON_FETCH_ENDPOINT from .dev.vars says where, or pass --neon-endpoint)";
  }
  const pgError = postgresErrorOf(error);
  if (pgError) {
    return `database error: ${firstLine(pgError.message)}`;
  }
  const known = errors.find((e) => e instanceof CliError || e instanceof InvalidInput || e instanceof TypeError);
  const e = known ?? errors.at(-1) ?? error;
  const message = firstLine(e instanceof Error ? e.message : String(e));
  if (/^fetch failed$|^Server error \(HTTP status/.test(message)) return `cannot reach the database${where ? ` at ${where}` : ""}: ${message}`;
  return message || String(e?.name ?? "unknown error");
}

function firstLine(text: string): string {
  return String(text).split("\n")[0].trim();
}
