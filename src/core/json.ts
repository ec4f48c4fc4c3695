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
