import { Option, type Command } from "commander";
import { requestCancel, requeue } from "../control.js";
import { JOB_STATES } from "../core/states.js";
import { getJob, listJobs, type JobDetail, type JobSummary } from "../ops/jobs.js";
import { cancelJobs, requeueJobs } from "../ops/bulk.js";
import { replayJob, replayJobs } from "../ops/replay.js";
import { stepWaitText } from "../app/read-steps.js";
import { DEFAULT_RETENTION, PRUNED_BY_DEFAULT } from "../core/retention.js";
import { pruneJobs, type PruneOptions } from "../ops/retention.js";
import { findMisfits, type UnknownTaskRow } from "../ops/misfits.js";
import { errorHeadline } from "../core/error-causes.js";
import { CliError, UsageError } from "./errors.js";
import { idOrSelection, jsonObject, printBulkCount, withSelectionOptions } from "./job-selection.js";
import { loadApp } from "./load-module.js";
import type { CliContext } from "./context.js";
import { formatAgo, formatSpan, formatTime, print, printJson, printRows, renderFields, renderTable } from "./output.js";
import { duration, jobId, positiveInt } from "./parse.js";

const APP_OPTION = 'the app module ("./src/app.ts" or "./dist/jobs.js:exportName") whose onTransition hooks see the change';

/** `akadze jobs list|unknown|show|cancel|requeue|replay|prune`. */
export function registerJobs(program: Command, ctx: CliContext): void {
  const jobs = program.command("jobs").description("list, inspect, cancel, requeue, replay and prune jobs");

  jobs.command("list").description("the newest jobs first")
    .addOption(new Option("--status <state>", "only jobs in this state").choices(JOB_STATES))
    .option("--queue <name>", "only jobs of this queue")
    .option("--task <name>", "only jobs of this task")
    .option("--limit <n>", "show at most this many (default 50, at most 1000)", positiveInt)
    .action((opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const rows = await listJobs(db, { state: opts.status, queue: opts.queue, task: opts.task, limit: opts.limit });
      const now = new Date();
      printRows<JobSummary>(ctx.json(cmd), rows, "no jobs match", [
        ["ID", (j) => j.id], ["TASK", (j) => j.task], ["QUEUE", (j) => j.queue], ["STATE", (j) => j.state],
        ["ATTEMPT", (j) => `${j.attempt}/${j.maxAttempts}`], ["RUN AT", (j) => formatAgo(j.runAt, now)],
        ["CREATED", (j) => formatAgo(j.createdAt, now)], ["FINISHED", (j) => formatAgo(j.finishedAt, now)],
      ]);
    }));

  jobs.command("unknown").description("queued jobs of tasks the app does not define: nothing that runs this app will ever claim them")
    .argument("[app]", 'module exporting the app (default: package.json "akadze.app")')
    .action(async (spec: string | undefined, _opts, cmd: Command) => {
      const app = await loadApp(spec);
      await ctx.withDb(cmd, async (db) => {
        const { unknownTasks } = await findMisfits(db, [...app.tasks.keys()]);
        printRows<UnknownTaskRow>(ctx.json(cmd), unknownTasks, "every queued job's task is defined by this app", [
          ["TASK", (r) => r.task], ["QUEUE", (r) => r.queue], ["QUEUED JOBS", (r) => r.jobs],
        ]);
      });
    });

  jobs.command("show").description("one job: args, result, errors history and timings")
    .argument("<id>", "the job id", jobId)
    .action((id: number, _opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const job = await getJob(db, id);
      if (!job) throw new CliError(`no job ${id}`);
      if (ctx.json(cmd)) return printJson(job);
      print(renderJob(job));
    }));

  withSelectionOptions(jobs.command("cancel"), "cancel")
    .description("cancel a queued job, or ask a running one to stop (exit 1 if it is not active); or every job a selection takes. A workflow's child jobs are cancelled with it")
    .argument("[id]", "the job id", jobId)
    .option("--app <module>", APP_OPTION)
    .action((id: number | undefined, opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const target = idOrSelection(id, opts, "jobs cancel");
      const app = opts.app ? await loadApp(opts.app) : undefined;
      if ("selection" in target) {
        const count = await cancelJobs(db, target.selection, { dryRun: opts.dryRun, app });
        return printBulkCount(ctx.json(cmd), count, Boolean(opts.dryRun), "cancelled or asked to stop", "cancel or ask to stop");
      }
      const marked = await requestCancel(db, target.id, app);
      const job = await getJob(db, target.id);
      if (!marked) throw new CliError(`job is not active (${job ? `job ${target.id} is ${job.state}` : `no job ${target.id}`})`);
      if (ctx.json(cmd)) return printJson({ id: target.id, cancelRequested: true, state: job?.state });
      print(job?.state === "running"
        ? `job ${target.id}: cancel requested; its body sees job.signal abort at the next heartbeat`
        : `job ${target.id}: cancelled`);
    }));

  withSelectionOptions(jobs.command("requeue"), "requeue")
    .description("move a failed job back to queued for one more run; or every failed job a selection takes")
    .argument("[id]", "the job id", jobId)
    .option("--app <module>", APP_OPTION)
    .action((id: number | undefined, opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const target = idOrSelection(id, opts, "jobs requeue");
      const app = opts.app ? await loadApp(opts.app) : undefined;
      if ("selection" in target) {
        const count = await requeueJobs(db, target.selection, { dryRun: opts.dryRun, app });
        return printBulkCount(ctx.json(cmd), count, Boolean(opts.dryRun), "requeued", "requeue");
      }
      if (!(await requeue(db, target.id, app))) {
        const job = await getJob(db, target.id);
        throw new CliError(job ? `job ${target.id} is ${job.state}: only failed jobs can be requeued` : `no job ${target.id}`);
      }
      if (ctx.json(cmd)) return printJson({ id: target.id, state: "queued" });
      print(`job ${target.id}: queued again`);
    }));

  withSelectionOptions(jobs.command("replay"), "replay")
    .description("run a finished job (succeeded, failed, cancelled) again as a new job that records where it came from; or every finished job a selection takes")
    .argument("[id]", "the job id", jobId)
    .option("--args <json>", "the new job's args instead of the old job's (checked against the task's schema with --app)", jsonObject)
    .option("--app <module>", 'the app module ("./src/app.ts") whose task schema checks --args')
    .action((id: number | undefined, opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const target = idOrSelection(id, opts, "jobs replay");
      const app = opts.app ? await loadApp(opts.app) : undefined;
      if ("selection" in target) {
        if (opts.args !== undefined) throw new UsageError("jobs replay: --args is for one job id; to select jobs by their args use --args-match");
        const count = await replayJobs(db, target.selection, { dryRun: opts.dryRun, app });
        return printBulkCount(ctx.json(cmd), count, Boolean(opts.dryRun), "replayed", "replay");
      }
      const replayed = await replayJob(db, target.id, { args: opts.args, app });
      if (replayed === null) {
        const job = await getJob(db, target.id);
        throw new CliError(job ? `job ${target.id} is ${job.state}: only finished jobs can be replayed` : `no job ${target.id}`);
      }
      if (ctx.json(cmd)) return printJson({ id: target.id, replayedAs: replayed });
      print(`job ${target.id}: replayed as job ${replayed}`);
    }));

  jobs.command("prune").description("delete finished jobs now (invocations also do this, a batch at a time)")
    .option("--older-than <age>", `finished longer ago than this (default ${DEFAULT_RETENTION})`, duration)
    .option("--failed", "also delete failed jobs (kept by default until requeued)")
    .option("--only-failed", "delete failed jobs only")
    .action((opts, cmd: Command) => ctx.withDb(cmd, async (db) => {
      const states: NonNullable<PruneOptions["states"]> = opts.onlyFailed ? ["failed"]
        : opts.failed ? [...PRUNED_BY_DEFAULT, "failed"] : [...PRUNED_BY_DEFAULT];
      const { deleted } = await pruneJobs(db, { olderThan: opts.olderThan, states });
      if (ctx.json(cmd)) return printJson({ deleted, states });
      print(`deleted ${deleted} ${states.join("/")} job${deleted === 1 ? "" : "s"}`);
    }));
}

function renderJob(job: JobDetail): string {
  const now = new Date();
  const ran = job.startedAt && job.finishedAt ? formatSpan(new Date(job.finishedAt).getTime() - new Date(job.startedAt).getTime()) : "-";
  const fields: [string, string | number][] = [
    ["id", job.id], ["task", job.task], ["queue", job.queue],
    ["state", job.state + (job.cancelRequested && job.state === "running" ? " (cancel requested)" : "")],
    ["attempt", `${job.attempt} of ${job.maxAttempts}`], ["priority", job.priority],
    ["args", JSON.stringify(job.args)], ["result", job.result === null ? "-" : JSON.stringify(job.result)],
    ["created", `${formatTime(job.createdAt)} (${formatAgo(job.createdAt, now)})`],
    ["run at", `${formatTime(job.runAt)} (${formatAgo(job.runAt, now)})`],
    ["started", formatTime(job.startedAt)], ["finished", formatTime(job.finishedAt)], ["ran for", ran],
  ];
  if (job.expiresAt) fields.push(["expires", formatTime(job.expiresAt)]);
  if (job.uniqueKey) fields.push(["unique key", job.uniqueKey]);
  if (job.limitKey) fields.push(["limit key", job.limitKey]);
  if (job.limitWaitMs !== null) fields.push(["limit wait", formatSpan(job.limitWaitMs)]);
  if (job.fairKey) fields.push(["fair key", job.fairKey]);
  if (job.fairSubKey) fields.push(["fair sub-key", job.fairSubKey]);
  if (job.replayOf !== null) fields.push(["replay of", `job ${job.replayOf}`]);
  if (job.traceContext) fields.push(["enqueued in trace", job.traceContext.traceparent]);
  if (job.leaseOwner) fields.push(["lease", `${job.leaseOwner} until ${formatTime(job.leaseExpiresAt)}`]);
  if (job.progressAt !== null) fields.push(["progress", `${errorHeadline(JSON.stringify(job.progress), 100)} (at ${formatTime(job.progressAt)})`]);
  const out = [renderFields(fields)];
  if (job.errors.length === 0) out.push("", "errors: none");
  else {
    out.push("", `errors (${job.errors.length}):`, renderTable(job.errors, [
      ["ATTEMPT", (e) => e.attempt], ["AT", (e) => formatTime(e.at)], ["KIND", (e) => e.kind], ["MESSAGE", (e) => errorHeadline(e.message, 100)],
    ]));
  }
  if (job.logs.length > 0 || job.logsDropped > 0) {
    const dropped = job.logsDropped > 0 ? `, ${job.logsDropped} dropped: the log was full` : "";
    out.push("", `log (${job.logs.length} line${job.logs.length === 1 ? "" : "s"}${dropped}):`, renderTable(job.logs, [
      ["ATTEMPT", (l) => l.attempt], ["AT", (l) => formatTime(l.at)], ["MESSAGE", (l) => errorHeadline(l.message, 160)],
    ]));
  }
  if (job.steps) {
    out.push("", `steps (${job.steps.length}):`, renderTable(job.steps, [
      ["#", (st) => st.seq + 1], ["NAME", (st) => st.name], ["KIND", (st) => st.kind], ["STATE", (st) => st.state], ["ATTEMPTS", (st) => st.attempts],
      ["RESULT / WAITING FOR", (st) => errorHeadline(stepWaitText(st) ?? (st.state === "done" && st.hasResult ? JSON.stringify(st.result) : st.errors.at(-1)?.message ?? "-"), 100)],
    ]));
  }
  return out.join("\n");
}
