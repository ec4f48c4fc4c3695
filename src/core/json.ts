/** True when `value` survives JSON.stringify/parse unchanged: plain objects, arrays, strings, finite numbers, booleans, null. */
export function isJsonValue(value: unknown): boolean {
  return firstNonJson(value, new Set()) === null;
}

/** A job's or a step's result above this size (as JSON) is refused and recorded as its error instead. */
export const MAX_RESULT_BYTES = 1024 * 1024;

/** Args nested deeper than this are refused: Postgres parses jsonb recursively and runs out of stack long before JS does. */
export const MAX_JSON_DEPTH = 100;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
// A NUL, or a UTF-16 surrogate without its partner: what Postgres text and jsonb cannot hold.
const UNSTORABLE = new RegExp(`\\u0000|${LONE_SURROGATE.source}`, "g");

/** `text` with every character Postgres cannot store replaced by U+FFFD. @example cleanText("a\u0000b") // "a\ufffdb" */
export function cleanText(text: string): string {
  return text.replace(UNSTORABLE, "\ufffd");
}

/** A JSON value with every string (keys too) cleaned. */
export function cleanJson(value: unknown): unknown {
  if (typeof value === "string") return cleanText(value);
  if (Array.isArray(value)) return value.map(cleanJson);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [cleanText(k), cleanJson(v)]));
  }
  return value;
}

/** An error message or stack is cut to this many characters. */
export const MAX_ERROR_TEXT = 16 * 1024;

/** An error's text as akadze stores it: cleaned (`cleanText`) and cut to MAX_ERROR_TEXT characters, saying how many were cut. */
export function errorText(text: string): string {
  const clean = cleanText(text);
  return clean.length > MAX_ERROR_TEXT ? `${clean.slice(0, MAX_ERROR_TEXT)}… (${clean.length - MAX_ERROR_TEXT} more characters)` : clean;
}

/**
 * Why Postgres cannot store this text, or null: `text` and `jsonb` hold no NUL byte, and a lone UTF-16
 * surrogate is no Unicode character at all (the driver cannot encode it).
 * @example textProblem("a\u0000b") // "contains a NUL byte (\\u0000), which Postgres cannot store"
 */
export function textProblem(text: string): string | null {
  if (text.includes("\u0000")) return "contains a NUL byte (\\u0000), which Postgres cannot store";
  if (LONE_SURROGATE.test(text)) return "contains a lone UTF-16 surrogate, which is not valid Unicode and Postgres cannot store";
  return null;
}

/**
 * The first reason `value` cannot be stored as jsonb, with its path (`args.items[2].name: ...`), or null:
 * the `isJsonValue` rules plus text Postgres can store (keys too) and at most MAX_JSON_DEPTH levels.
 * @example jsonProblem({ note: "\ud800" }, "args") // "args.note: contains a lone UTF-16 surrogate, ..."
 */
export function jsonProblem(value: unknown, path: string, depth = 0, seen = new Set<object>()): string | null {
  if (value === null || typeof value === "boolean") return null;
  if (typeof value === "string") return at(path, textProblem(value));
  if (typeof value === "number") return Number.isFinite(value) ? null : `${path}: ${value} is not a finite number, which JSON cannot hold`;
  if (typeof value !== "object") return `${path}: a value of type ${typeof value} is not JSON`;
  if (seen.has(value)) return `${path}: a cycle is not JSON`;
  if (depth >= MAX_JSON_DEPTH) return `${path}: nested deeper than ${MAX_JSON_DEPTH} levels`;
  const proto = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) {
    return `${path}: a ${value.constructor?.name ?? "class instance"} is not JSON (use plain objects, arrays, strings, numbers)`;
  }
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const problem = jsonProblem(value[i], `${path}[${i}]`, depth + 1, seen);
        if (problem) return problem;
      }
      return null;
    }
    for (const [key, item] of Object.entries(value)) {
      const keyProblem = textProblem(key);
      if (keyProblem) return `${path}: the key ${JSON.stringify(key)} ${keyProblem}`;
      if (item === undefined) continue; // JSON.stringify leaves it out
      const problem = jsonProblem(item, `${path}.${key}`, depth + 1, seen);
      if (problem) return problem;
    }
    return null;
  } finally {
    seen.delete(value);
  }
}

/**
 * Why `value` is not JSON, naming the first offending part and where it sits, or `null` when it is JSON.
 * @example describeNonJson({ at: new Date() }) // "a Date at .at"
 */
export function describeNonJson(value: unknown): string | null {
  const found = firstNonJson(value, new Set());
  return found && found.text(found.path === "" ? "" : ` at ${found.path}`);
}

/** The first part of `value` that is not JSON: its path, filled in on the way out (nothing is built for JSON), and its description. */
interface NonJson { path: string; text: (where: string) => string }

function firstNonJson(value: unknown, seen: Set<object>): NonJson | null {
  const found = (text: NonJson["text"]): NonJson => ({ path: "", text });
  if (value === null || typeof value === "string" || typeof value === "boolean") return null;
  if (typeof value === "number") return Number.isFinite(value) ? null : found((w) => `the number ${value}${w}`);
  if (typeof value === "bigint") return found((w) => `a BigInt${w}`);
  if (typeof value !== "object") return found((w) => `${typeof value === "undefined" ? "undefined" : `a ${typeof value}`}${w}`);
  if (seen.has(value)) return found((w) => `a cycle${w} (an object that contains itself)`);
  const proto = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) {
    const name = (value as { constructor?: { name?: string } }).constructor?.name;
    return found((w) => `${name ? `a ${name}` : "an object with a custom prototype"}${w}`);
  }
  seen.add(value);
  try {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const inner = i in value ? firstNonJson(value[i], seen) : null; // a hole is null to JSON
        if (inner) { inner.path = `[${i}]${inner.path}`; return inner; }
      }
      return null;
    }
    for (const key of Object.keys(value)) {
      const item = (value as Record<string, unknown>)[key];
      if (item === undefined) continue; // JSON.stringify leaves it out
      const inner = firstNonJson(item, seen);
      if (inner) { inner.path = `.${key}${inner.path}`; return inner; }
    }
    return null;
  } finally {
    seen.delete(value);
  }
}

function at(path: string, problem: string | null): string | null {
  return problem === null ? null : `${path}: ${problem}`;
}
