import type { Command } from "commander";
import { listSchedules, type ScheduleInfo } from "../ops/schedules.js";
import type { CliContext } from "./context.js";
import { formatAgo, printRows } from "./output.js";

/** `akadze schedules list`: what invocations recorded in akadze.schedules. */
export function registerSchedules(program: Command, ctx: CliContext): void {
  const schedules = program.command("schedules").description("periodic tasks, as invocations have recorded them");
  schedules.command("list").description("every schedule with the last slot enqueued")
    .action((_opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const rows = await listSchedules(db);
      const now = new Date();
      printRows<ScheduleInfo>(ctx.json(cmd), rows, "no schedules recorded yet: they appear once an invocation of an app with schedules has run", [
        ["NAME", (s) => s.name], ["TASK", (s) => s.task], ["LAST SLOT", (s) => formatAgo(s.lastSlot, now)],
        ["SEEN", (s) => formatAgo(s.seenAt, now)],
      ]);
    }));
}
