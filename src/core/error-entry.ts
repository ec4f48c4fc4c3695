import { causesOf, stackWithout, storedMessage, withoutParams } from "./error-causes.js";
import type { ErrorEntry } from "./errors.js";
import { cleanJson, errorText } from "./json.js";

/**
 * The one way a job's errors entry is made for something thrown, at `at` on the caller's (injected) clock: an
 * Error's name, message (with its causes, without a failed query's parameters) and stack; anything else as its JSON payload. `about` gives the
 * entry a kind of its own and wraps its message, for a throw that is not the handler's (a transition hook).
 * @example errorEntryOf(new Error("down"), 2, now) // { attempt: 2, at, kind: "Error", message: "down", stack }
 */
export function errorEntryOf(error: unknown, attempt: number, at: Date, about?: { kind: string; message: (stored: string) => string }): ErrorEntry {
  const entry = thrownEntry(error, attempt, at.toISOString());
  return about ? { ...entry, kind: about.kind, message: about.message(entry.message) } : entry;
}

/** An entry that is akadze's own note on a job, not something thrown (an outcome the database refused). */
export function noteEntry(kind: string, message: string, attempt: number, at: Date): ErrorEntry {
  return { attempt, at: at.toISOString(), kind, message: errorText(message), stack: null };
}

/**
 * The entry as a row can hold it: its texts cleaned and cut (`errorText`), its payload cleaned (`cleanJson`).
 * @example boundedEntry(errorEntryOf(error, attempt, now)) // as a workflow step stores it
 */
export function boundedEntry(entry: ErrorEntry): ErrorEntry {
  const bounded = { ...entry, kind: errorText(String(entry.kind)), message: errorText(String(entry.message)), stack: entry.stack === null ? null : errorText(String(entry.stack)) };
  if (entry.payload !== undefined) bounded.payload = cleanJson(entry.payload);
  return bounded;
}

function thrownEntry(error: unknown, attempt: number, at: string): ErrorEntry {
  if (error instanceof Error) {
    const causes = causesOf(error);
    const kind = safeText(() => error.name, "Error");
    const own = safeText(() => error.message, "");
    const message = withoutParams(error, own); // a drizzle query error's parameters are the app's data
    return { attempt, at, kind, message: storedMessage(error, message, causes),
      stack: safeText(() => stackWithout(error.stack ?? "", kind, own, message), "") || null, ...(causes.length > 0 ? { causes } : {}) };
  }
  const payload = jsonPayload(error);
  const message = payload !== undefined ? safeText(() => JSON.stringify(payload), "") : safeText(() => String(error), "a value that cannot be turned into text");
  return { attempt, at, kind: error === null ? "null" : `NonError(${typeof error})`, message, stack: null, ...(payload !== undefined ? { payload } : {}) };
}

function safeText(read: () => string, fallback: string): string {
  try { return String(read()); } catch { return fallback; }
}

function jsonPayload(value: unknown): unknown {
  try {
    if (value === undefined || typeof value === "function" || typeof value === "symbol" || typeof value === "bigint") return undefined;
    const text = JSON.stringify(value);
    return text === undefined ? undefined : JSON.parse(text);
  } catch { return undefined; }
}
