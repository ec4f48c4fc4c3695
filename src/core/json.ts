/** True when `value` survives JSON.stringify/parse unchanged: plain objects, arrays, strings, finite numbers, booleans, null. */
export function isJsonValue(value: unknown, seen = new Set<object>()): boolean {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (typeof value !== "object") return false; // undefined inside a value, bigint, function, symbol
  if (seen.has(value)) return false; // a cycle
  const proto = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) return false; // Date, Map, class instance
  seen.add(value);
  const ok = Array.isArray(value)
    ? value.every((item) => isJsonValue(item, seen))
    : Object.values(value).every((item) => item === undefined || isJsonValue(item, seen));
  seen.delete(value);
  return ok;
}

/**
 * Why `value` is not JSON, naming the first offending part and where it sits, or `null` when it is JSON.
 * @example describeNonJson({ at: new Date() }) // "a Date at .at"
 */
export function describeNonJson(value: unknown, path = "", seen = new Set<object>()): string | null {
  const where = path === "" ? "" : ` at ${path}`;
  if (value === null || typeof value === "string" || typeof value === "boolean") return null;
  if (typeof value === "number") return Number.isFinite(value) ? null : `the number ${value}${where}`;
  if (typeof value === "bigint") return `a BigInt${where}`;
  if (typeof value !== "object") return `${typeof value === "undefined" ? "undefined" : `a ${typeof value}`}${where}`;
  if (seen.has(value)) return `a cycle${where} (an object that contains itself)`;
  const proto = Object.getPrototypeOf(value);
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null) {
    const name = (value as { constructor?: { name?: string } }).constructor?.name;
    return `${name ? `a ${name}` : "an object with a custom prototype"}${where}`;
  }
  seen.add(value);
  try {
    const entries: [string, unknown][] = Array.isArray(value)
      ? value.map((item, i) => [`[${i}]`, item])
      : Object.entries(value).filter(([, item]) => item !== undefined).map(([key, item]) => [`.${key}`, item]);
    for (const [step, item] of entries) {
      const reason = describeNonJson(item, path + step, seen);
      if (reason !== null) return reason;
    }
    return null;
  } finally {
    seen.delete(value);
  }
}
