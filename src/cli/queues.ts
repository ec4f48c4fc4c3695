import type { Command } from "commander";
import { pauseQueue, resumeQueue } from "../control.js";
import { listQueues, type QueueRow } from "../ops/queues.js";
import type { CliContext } from "./context.js";
import { formatSpan, print, printJson, printRows } from "./output.js";

/** `akadze queues list|pause|resume`. */
export function registerQueues(program: Command, ctx: CliContext): void {
  const queues = program.command("queues").description("queue counts, pause and resume");

  queues.command("list").description("every queue with its jobs by state and its oldest due job's wait")
    .action((_opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const rows = await listQueues(db);
      // The history's counts, estimated from a sample once it is large, are marked "~".
      const kept = (q: QueueRow, n: number) => (q.estimated && n > 0 ? `~${n}` : n);
      printRows<QueueRow>(ctx.json(cmd), rows, "no queues yet: enqueue a job or pause a queue", [
        ["QUEUE", (q) => q.queue], ["PAUSED", (q) => (q.paused ? "yes" : "no")], ["DUE", (q) => q.due],
        ["SCHEDULED", (q) => q.scheduled], ["RUNNING", (q) => q.running], ["CLAIMED", (q) => q.claimed], ["SUCCEEDED", (q) => kept(q, q.succeeded)],
        ["FAILED", (q) => q.failed], ["CANCELLED", (q) => kept(q, q.cancelled)], ["RATE LIMITED", (q) => kept(q, q.rateLimited)],
        ["OLDEST DUE", (q) => (q.due > 0 ? formatSpan(q.oldestDueSeconds * 1000) : "-")],
      ]);
    }));

  for (const [name, paused] of [["pause", true], ["resume", false]] as const) {
    queues.command(name).description(paused ? "stop every invocation from claiming this queue" : "let invocations claim this queue again")
      .argument("<queue>", "the queue name")
      .action((queue: string, _opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
        await (paused ? pauseQueue : resumeQueue)(db, queue);
        // A typo pauses nothing real: say so (it still takes effect, in case the jobs come later).
        const known = paused && (await listQueues(db)).some((q) => q.queue === queue && q.due + q.scheduled + q.running + q.claimed + q.succeeded + q.failed + q.cancelled + q.rateLimited > 0);
        if (paused && !known) process.stderr.write(`akadze: queue ${queue} has no jobs yet: paused anyway; check the name with \`akadze queues list\`\n`);
        if (ctx.json(cmd)) return printJson({ queue, paused });
        print(`queue ${queue}: ${paused ? "paused" : "resumed"}`);
      }));
  }
}
