import * as v from "valibot";

/** A span of time: milliseconds as a number, or a string such as `"500ms"`, `"30s"`, `"5m"`, `"2h"`, `"1d"`. @example const d: Duration = "30s"; */
export type Duration = number | `${number}${"ms" | "s" | "m" | "h" | "d"}`;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION_PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/** Milliseconds of a Duration, or `undefined` when it is not a valid non-negative Duration. */
export function tryParseDuration(value: unknown): number | undefined {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? value : undefined;
  if (typeof value !== "string") return undefined;
  const match = DURATION_PATTERN.exec(value.trim());
  if (!match) return undefined;
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

/**
 * Milliseconds of a Duration; throws a TypeError naming the bad value.
 * @example parseDuration("5m") // 300000
 */
export function parseDuration(value: unknown, what = "duration"): number {
  const ms = tryParseDuration(value);
  if (ms === undefined) {
    throw new TypeError(`${what} must be milliseconds or a string like "500ms", "30s", "5m", "2h", "1d"; got ${JSON.stringify(value)}`);
  }
  return ms;
}

/** Valibot schema of a Duration, transformed to milliseconds. */
export const DurationSchema = v.pipe(
  v.union([v.number(), v.string()]),
  v.check((value) => tryParseDuration(value) !== undefined, (issue) =>
    `Invalid duration ${JSON.stringify(issue.input)}: use milliseconds or "500ms", "30s", "5m", "2h", "1d"`),
  v.transform((value) => tryParseDuration(value) as number),
);
