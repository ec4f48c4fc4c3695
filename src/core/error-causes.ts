// What a job's errors entry keeps of the errors the thrown one wraps. The reason of the most common real
// failure sits in a cause: drizzle throws `Failed query: <sql> params: ...` and puts the driver's error,
// with Postgres's message, SQLSTATE and detail, in `.cause`. The params line is dropped (`withoutParams`). The chain is kept twice: as `causes` for
// programs (getJob, `--json`), and as "caused by" lines at the end of the message, so that every place
// that shows a message (the CLI, the dashboard, the log lines) shows the reason without knowing of causes.
// The chain is walked here, once (`causeChain`), for every reader of causes; errors.ts imports it, not the reverse.
import { errorText } from "./json.js";

/** An error the thrown one wraps through `cause`, as its errors entry keeps it; a Postgres error's fields with it. */
export interface ErrorCause {
  kind: string; message: string;
  /** The five-character SQLSTATE of a Postgres error (`42P01`: undefined table). */
  code?: string; detail?: string; hint?: string; constraint?: string; table?: string; column?: string;
}

const POSTGRES_FIELDS = ["code", "detail", "hint", "constraint", "table", "column"] as const;
/** The line that introduces each cause in a stored message. */
const CAUSED_BY = "caused by ";

/** Postgres's own error, whatever the driver: pg, PGlite and Neon all give a SQLSTATE `code` and a `severity`. */
function isPostgresError(e: any): boolean {
  return typeof e?.code === "string" && /^[0-9A-Z]{5}$/.test(e.code) && e.severity !== undefined;
}

/**
 * The error and every error it wraps through `cause`, outermost first (drizzle wraps the driver's error,
 * fetch wraps the socket's). At most 10 deep, so a cycle of causes cannot hang the caller.
 * @example causeChain(error).some((e) => e?.code === "23505")
 */
export function causeChain(error: unknown): any[] {
  const chain: any[] = [];
  for (let e: any = error; e && chain.length < 10; e = e.cause) {
    chain.push(e);
    // A failed connection to several addresses is an AggregateError whose first error tells why.
    if (e instanceof AggregateError && e.errors.length > 0 && !e.cause) chain.push(...e.errors.slice(0, 1));
  }
  return chain;
}

/**
 * The Postgres error inside an error, whatever the driver (drizzle wraps it as `cause`; pg, PGlite and
 * Neon's errors carry a five-character SQLSTATE `code` and a `severity`), or undefined.
 * @example if (postgresErrorOf(e)?.code?.startsWith("22")) // a data exception: bad input
 */
export function postgresErrorOf(error: unknown): { code: string; message: string } | undefined {
  return causeChain(error).find(isPostgresError);
}

/**
 * An error's message for a line of text: the database's (or the network's) own when a cause carries a code, else
 * the error's, without a failed query's parameters (`withoutParams`).
 * @example errorMessage(drizzleError) // "deadlock detected"
 */
export function errorMessage(error: unknown): string {
  const coded = causeChain(error).find((e) => typeof e?.message === "string" && e.code);
  if (coded) return coded.message;
  try { return withoutParams(error, String((error as any)?.message ?? error)); } catch { return "unknown error"; }
}

/** A field as storable text (cleaned and cut, `errorText`), or undefined when absent or unreadable. */
function read(get: () => unknown): string | undefined {
  try {
    const value = get();
    return value === undefined || value === null || value === "" ? undefined : errorText(String(value));
  } catch {
    return undefined;
  }
}

/**
 * An error's message without the query parameters a drizzle query error appends ("Failed query: <sql>\nparams:
 * <values>"): they are the app's data (emails, tokens), and a stored error is shown by the dashboard and the
 * admin API. The SQL, with its $1 placeholders, stays. Any other message is returned as it is.
 * @example withoutParams(drizzleError, drizzleError.message) // "Failed query: select * from users where email = $1"
 */
export function withoutParams(error: unknown, message: string): string {
  const e = error as { query?: unknown; params?: unknown } | null;
  if (!e || typeof e !== "object" || typeof e.query !== "string" || !("params" in e)) return message;
  const head = `Failed query: ${e.query}`;
  return message.startsWith(`${head}\nparams:`) ? head : message;
}

/** A stack whose first lines repeat `message` (V8's "<name>: <message>"), with `stripped` in its place. */
export function stackWithout(stack: string, name: string, message: string, stripped: string): string {
  const head = `${name}: ${message}`;
  return stripped !== message && stack.startsWith(head) ? `${name}: ${stripped}${stack.slice(head.length)}` : stack;
}

function causeOf(e: any): ErrorCause {
  const isError = e instanceof Error;
  const cause: ErrorCause = {
    kind: isError ? read(() => e.name) ?? "Error" : `NonError(${typeof e})`,
    message: (isError ? read(() => withoutParams(e, String(e.message))) : read(() => (typeof e === "object" ? JSON.stringify(e) : e))) ?? "",
  };
  if (isPostgresError(e)) for (const field of POSTGRES_FIELDS) {
    const value = read(() => e[field]);
    if (value !== undefined) cause[field] = value;
  }
  return cause;
}

/** The errors `error` wraps through `cause`, outermost first (not `error` itself); empty when it wraps none. */
export function causesOf(error: unknown): ErrorCause[] {
  return causeChain(error).slice(1).map(causeOf);
}

/** A Postgres error's SQLSTATE, detail and hint, as the text that follows its message, or "". */
function postgresSuffix(fields: Pick<ErrorCause, "code" | "detail" | "hint">): string {
  const parts = [fields.code && `SQLSTATE ${fields.code}`, fields.detail, fields.hint && `hint: ${fields.hint}`].filter(Boolean);
  return parts.length > 0 ? ` (${parts.join("; ")})` : "";
}

/**
 * The message akadze stores for a thrown error: its own message (with the SQLSTATE when it is itself a
 * Postgres error), then one "caused by <kind>: <message> (SQLSTATE ...; detail)" line per cause.
 * @example storedMessage(drizzleError, message) // "Failed query: select ...\ncaused by error: relation \"x\" does not exist (SQLSTATE 42P01)"
 */
export function storedMessage(error: unknown, message: string, causes: ErrorCause[] = causesOf(error)): string {
  const own = isPostgresError(error) ? message + postgresSuffix(causeOf(error)) : message;
  return [own, ...causes.map((c) => `${CAUSED_BY}${c.kind}: ${c.message}${postgresSuffix(c)}`)].join("\n");
}

/**
 * A stored message on one line, for a table cell or a log line: its first line (cut to `headLength`
 * characters: drizzle's holds the whole SQL) and then every "caused by" line, which say why.
 * @example errorHeadline('Failed query: select 1\nparams: \ncaused by error: boom') // "Failed query: select 1 ← caused by error: boom"
 */
export function errorHeadline(message: string, headLength = 120): string {
  const lines = String(message ?? "").split("\n");
  const head = lines[0].trim();
  const causes = lines.slice(1).filter((l) => l.startsWith(CAUSED_BY)).map((l) => l.trim());
  const cut = head.length > headLength ? `${head.slice(0, headLength - 1)}…` : head;
  return [cut, ...causes].join(" ← ");
}
