import { InvalidArgumentError, type Command } from "commander";
import { listSchedules, type ScheduleInfo } from "../ops/schedules.js";
import {
  createSchedule, deleteSchedule, pauseSchedule, resumeSchedule, updateSchedule, type RuntimeSchedule, type ScheduleChange,
} from "../ops/runtime-schedules.js";
import { CliError, UsageError } from "./errors.js";
import type { CliContext } from "./context.js";
import { jsonObject } from "./job-selection.js";
import { loadApp } from "./load-module.js";
import { formatAgo, print, printJson, printRows } from "./output.js";
import { duration } from "./parse.js";

const APP_OPTION = 'the app module ("./src/app.ts" or "./dist/jobs.js:exportName") whose task the schedule enqueues (default: package.json "akadze.app")';

/** `--catch-up latest` or `--catch-up 5` (the latest 5 missed slots). */
function catchUp(value: string): "latest" | { all: number } {
  if (value === "latest") return "latest";
  if (/^\d+$/.test(value) && Number(value) >= 1) return { all: Number(value) };
  throw new InvalidArgumentError('expected "latest" or a number of missed slots such as 5.');
}

function overlap(value: string): "allow" | "skip" {
  if (value !== "allow" && value !== "skip") throw new InvalidArgumentError('expected "allow" or "skip".');
  return value;
}

/** The options `create` and `update` share; `create` requires --task and one of --cron and --every. */
function withDefinitionOptions(command: Command): Command {
  return command
    .option("--task <name>", "the task each slot enqueues (registered in the app)")
    .option("--cron <expression>", 'a cron expression: 5 fields, or 6 with seconds first, e.g. "0 9 * * *"')
    .option("--timezone <zone>", 'the IANA time zone of --cron, e.g. "Europe/Berlin" (default UTC)')
    .option("--every <duration>", 'a fixed period instead of --cron, e.g. "5m"', duration)
    .option("--args <json>", "the args of every job, checked against the task's schema (default {})", jsonObject)
    .option("--tenant <tenant>", "whose schedule it is (schedules list --tenant shows one tenant's)")
    .option("--catch-up <latest|n>", "after a gap: only the latest missed slot (default), or the latest n", catchUp)
    .option("--overlap <allow|skip>", "skip: drop a slot while the previous slot's job is queued or running (default allow)", overlap)
    .option("--app <module>", APP_OPTION);
}

/** The definition fields the options give. */
function definitionOf(opts: Record<string, unknown>): ScheduleChange {
  const change: ScheduleChange = {};
  for (const key of ["task", "cron", "timezone", "every", "args", "tenant", "catchUp", "overlap"] as const) {
    if (opts[key] !== undefined) (change as Record<string, unknown>)[key] = opts[key];
  }
  return change;
}

function describe(s: RuntimeSchedule): string {
  const timing = s.cron !== null ? `cron "${s.cron}"${s.timezone ? ` ${s.timezone}` : ""}` : `every ${s.everyMs} ms`;
  return `schedule ${s.name}: ${s.task} ${timing}${s.paused ? ", paused" : `, next slot ${s.nextSlot?.toISOString() ?? "none"}`}`;
}

const policy = (s: ScheduleInfo) => `${s.catchUp === "latest" ? "latest" : `all ${s.catchUp.all}`}${s.overlap === "skip" ? ", skip overlap" : ""}`;

/** `akadze schedules list|create|update|pause|resume|delete`. */
export function registerSchedules(program: Command, ctx: CliContext): void {
  const schedules = program.command("schedules").description("schedules: the ones in the app's code as invocations recorded them, and the ones made at runtime");

  schedules.command("list").description("every schedule with its last and next slot")
    .option("--tenant <tenant>", "only this tenant's runtime schedules")
    .option("--app <module>", "the app module, to show its code schedules' definitions and next slots")
    .action((opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const app = opts.app ? await loadApp(opts.app) : undefined;
      const rows = await listSchedules(db, { tenant: opts.tenant, app });
      const now = new Date();
      printRows<ScheduleInfo>(ctx.json(cmd), rows, opts.tenant !== undefined ? `no schedules for tenant ${opts.tenant}`
        : "no schedules recorded yet: they appear once an invocation of an app with schedules has run, or `akadze schedules create` made one", [
        ["NAME", (s) => s.name], ["TASK", (s) => s.task], ["KIND", (s) => (s.runtime ? "runtime" : "code")], ["TENANT", (s) => s.tenant ?? "-"],
        ["SCHEDULE", (s) => s.schedule ?? "-"], ["POLICY", policy], ["PAUSED", (s) => (s.paused ? "yes" : "no")],
        ["LAST SLOT", (s) => formatAgo(s.lastSlot, now)], ["NEXT SLOT", (s) => formatAgo(s.nextSlot, now)], ["SEEN", (s) => formatAgo(s.seenAt, now)],
      ]);
    }));

  withDefinitionOptions(schedules.command("create").description("store a schedule every invocation fires, each slot once, from its first slot after now")
    .argument("<name>", "unique among all schedules, those in code included"))
    .option("--paused", "create it paused (resume fires from the next slot)")
    .action((name: string, opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      if (opts.task === undefined) throw new UsageError("schedules create: give --task");
      if ((opts.cron === undefined) === (opts.every === undefined)) throw new UsageError("schedules create: give either --cron or --every");
      const app = await loadApp(opts.app);
      const created = await createSchedule(db, { name, ...definitionOf(opts), paused: Boolean(opts.paused) } as never, { app });
      if (ctx.json(cmd)) return printJson(created);
      print(describe(created));
    }));

  withDefinitionOptions(schedules.command("update").description("change a runtime schedule; options not given keep their value")
    .argument("<name>", "the runtime schedule"))
    .action((name: string, opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const change = definitionOf(opts);
      if (Object.keys(change).length === 0) throw new UsageError("schedules update: give at least one option to change (see --help)");
      const app = await loadApp(opts.app);
      const updated = await updateSchedule(db, name, change, { app });
      if (!updated) throw new CliError(`no runtime schedule ${JSON.stringify(name)}`);
      if (ctx.json(cmd)) return printJson(updated);
      print(describe(updated));
    }));

  for (const [action, operation] of [["pause", pauseSchedule], ["resume", resumeSchedule]] as const) {
    schedules.command(action).description(action === "pause" ? "stop a runtime schedule firing (its slots while paused never fire)" : "fire a paused runtime schedule again, from its next slot")
      .argument("<name>", "the runtime schedule")
      .action((name: string, _opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
        if (!(await operation(db, name))) throw new CliError(`no runtime schedule ${JSON.stringify(name)}`);
        if (ctx.json(cmd)) return printJson({ name, paused: action === "pause" });
        print(`schedule ${name}: ${action === "pause" ? "paused" : "resumed"}`);
      }));
  }

  schedules.command("delete").description("delete a runtime schedule (jobs it enqueued stay)")
    .argument("<name>", "the runtime schedule")
    .action((name: string, _opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      if (!(await deleteSchedule(db, name))) throw new CliError(`no runtime schedule ${JSON.stringify(name)}`);
      if (ctx.json(cmd)) return printJson({ name, deleted: true });
      print(`schedule ${name}: deleted`);
    }));
}
