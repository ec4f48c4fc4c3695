import { InvalidArgumentError, type Command } from "commander";
import type { JobSelection } from "../ops/job-selection.js";
import { BULK_LIMIT } from "../ops/job-selection.js";
import { UsageError } from "./errors.js";
import { collect, duration, positiveInt } from "./parse.js";
import { print, printJson } from "./output.js";

/** A JSON object from the command line (`--args-match '{"userId":7}'`). */
export function jsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try { parsed = JSON.parse(value); } catch { throw new InvalidArgumentError("expected JSON, such as '{\"userId\":7}'."); }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError("expected a JSON object, such as '{\"userId\":7}'.");
  return parsed as Record<string, unknown>;
}

/** Adds the options that select jobs for a bulk operation (`akadze jobs cancel --task X --state queued --dry-run`). */
export function withSelectionOptions(command: Command, verb: string): Command {
  return command
    .option("--task <name>", `${verb} jobs of this task`)
    .option("--queue <name>", `${verb} jobs of this queue`)
    .option("--state <state>", "only jobs in this state (repeat for several)", collect)
    .option("--fair-key <key>", "only jobs enqueued with this fairness key")
    .option("--older-than <age>", "only jobs enqueued longer ago than this", duration)
    .option("--newer-than <age>", "only jobs enqueued less long ago than this", duration)
    .option("--args-match <json>", "only jobs whose args contain this JSON object", jsonObject)
    .option("--limit <n>", `at most this many jobs, oldest first (default and most ${BULK_LIMIT})`, positiveInt)
    .option("--dry-run", "count the jobs it would change, and change nothing");
}

/** The selection the options give, or undefined when none was given (then the command takes a job id). */
export function selectionOf(opts: Record<string, any>): JobSelection | undefined {
  const selection: JobSelection = {
    task: opts.task, queue: opts.queue, state: opts.state, fairKey: opts.fairKey, olderThan: opts.olderThan,
    newerThan: opts.newerThan, args: opts.argsMatch, limit: opts.limit,
  };
  const given = Object.fromEntries(Object.entries(selection).filter(([, value]) => value !== undefined)) as JobSelection;
  return Object.keys(given).length > 0 ? given : undefined;
}

/** The job id or the selection a command got, refusing both or neither (`--dry-run` needs a selection). */
export function idOrSelection(id: number | undefined, opts: Record<string, any>, command: string): { id: number } | { selection: JobSelection } {
  const selection = selectionOf(opts);
  if (id !== undefined && (selection || opts.dryRun)) throw new UsageError(`${command}: give a job id or a selection (--task, --queue, --state, ...), not both`);
  if (id !== undefined) return { id };
  if (!selection) throw new UsageError(`${command}: give a job id, or select jobs with --task, --queue, --state, --fair-key, --older-than, --newer-than or --args-match`);
  return { selection };
}

/** Prints a bulk operation's count: "cancelled 3 jobs", or for a dry run "would cancel 3 jobs (dry run: nothing changed)". */
export function printBulkCount(json: boolean, count: number, dryRun: boolean, done: string, wouldDo: string): void {
  if (json) return printJson({ count, dryRun });
  const jobs = `${count} job${count === 1 ? "" : "s"}`;
  print(dryRun ? `would ${wouldDo} ${jobs} (dry run: nothing changed)` : `${done} ${jobs}`);
}
