import { InvalidArgumentError } from "commander";
import { tryParseDuration } from "../core/duration.js";
import { LOG_LEVELS, type LogLevel } from "../ops/invocation-log.js";

/** Commander argument parsers: a bad value becomes commander's one-line "argument ... is invalid" error. */

export function positiveInt(value: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1 || !Number.isSafeInteger(Number(value))) {
    throw new InvalidArgumentError("expected a positive integer.");
  }
  return Number(value);
}

/** A job id: a positive integer up to 2^53 - 1; a larger one is refused, never rounded to another job's id. */
export function jobId(value: string): number {
  try { return positiveInt(value); } catch { throw new InvalidArgumentError(`a job id is a positive integer no larger than ${Number.MAX_SAFE_INTEGER}.`); }
}

/** A Duration from the command line: "500ms", "30s", "5m", "2h", "1d", or bare milliseconds. */
export function duration(value: string): number {
  const ms = tryParseDuration(/^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : value);
  if (ms === undefined) throw new InvalidArgumentError('expected a duration such as "500ms", "30s", "5m", "2h" or "1d".');
  return ms;
}

/** For options that may repeat: `--queue a --queue b`. */
export function collect(value: string, previous: string[] | undefined): string[] {
  if (value.trim() === "") throw new InvalidArgumentError("must not be empty.");
  return [...(previous ?? []), value];
}

/** A TCP port; 0 lets the system pick a free one. */
export function port(value: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) > 65534) throw new InvalidArgumentError("expected a port number (0 picks a free one).");
  return Number(value);
}

/** A log level: silent, warn or info. */
export function logLevel(value: string): LogLevel {
  if (!(LOG_LEVELS as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${LOG_LEVELS.join(", ")}.`);
  return value as LogLevel;
}
