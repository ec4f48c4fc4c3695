import type { Command } from "commander";
import { readSchedules, type ScheduleRow } from "../ops/schedules.js";
import type { CliContext } from "./main.js";
import { formatAgo, print, printJson, renderTable } from "./output.js";

/** `akadze schedules list`: what invocations recorded in akadze.schedules. */
export function registerSchedules(program: Command, ctx: CliContext): void {
  const schedules = program.command("schedules").description("periodic tasks, as invocations have recorded them");
  schedules.command("list").description("every schedule with the last slot enqueued")
    .action((_opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const rows = await readSchedules(db);
      if (ctx.json(cmd)) return printJson(rows);
      if (rows.length === 0) return print("no schedules recorded yet: they appear once an invocation of an app with schedules has run");
      const now = new Date();
      print(renderTable<ScheduleRow>(rows, [
        ["NAME", (s) => s.name], ["TASK", (s) => s.task], ["LAST SLOT", (s) => formatAgo(s.lastSlot, now)],
        ["SEEN", (s) => formatAgo(s.seenAt, now)],
      ]));
    }));
}
