// The jobs list (filtered, newest first, paged by id) and one job with its args, result and errors.
import { stepWaitText } from "../../app/read-steps.js";
import { FINISHED_STATES, JOB_STATES } from "../../core/states.js";
import { BulkActions, type BulkAction, type JobsQuery } from "./bulk.js";
import { formatSpan, formatTime } from "../../core/time-text.js";
import type { JobDetail, JobSummary } from "../../ops/jobs.js";
import { Ago, Badge, Layout, Notice, Post, TableCard, type PageContext } from "./layout.js";

/** The jobs list, one page of it. @example c.html(<JobsPage ctx={ctx} query={{ state: "failed" }} jobs={jobs} pageSize={50} />) */
export function JobsPage(props: { ctx: PageContext; query: JobsQuery; jobs: JobSummary[]; pageSize: number; bulk?: [BulkAction, number][]; notice?: string }) {
  const { ctx, query, jobs } = props;
  const filters = new URLSearchParams();
  for (const key of ["state", "queue", "task"] as const) if (query[key]) filters.set(key, query[key]!);
  const older = new URLSearchParams(filters);
  if (jobs.length === props.pageSize) older.set("before", String(jobs[jobs.length - 1].id));
  return (
    <Layout ctx={ctx} title="Jobs" active="jobs">
      <h1>Jobs</h1>
      <Notice text={props.notice} />
      <form class="card filters" method="get" action={`${ctx.base}/jobs`}>
        <label>State
          <select name="state">
            <option value="">any</option>
            {JOB_STATES.map((s) => <option value={s} selected={query.state === s}>{s}</option>)}
          </select>
        </label>
        <label>Queue<input name="queue" value={query.queue ?? ""} placeholder="any" /></label>
        <label>Task<input name="task" value={query.task ?? ""} placeholder="any" /></label>
        <button type="submit">Filter</button>
      </form>
      <BulkActions ctx={ctx} query={query} counts={props.bulk ?? []} />
      <TableCard empty="No jobs match." tableId="jobs"
        head={<><th class="n">Id</th><th>Task</th><th>Queue</th><th>State</th><th class="n">Attempt</th><th>Created</th><th>Finished</th></>}
        rows={jobs.map((j) => (
          <tr data-job={j.id}>
            <td class="n"><a href={`${ctx.base}/jobs/${j.id}`}>{j.id}</a></td>
            <td>{j.task}</td><td>{j.queue}</td><td><Badge value={j.state} /></td>
            <td class="n">{j.attempt} / {j.maxAttempts}</td>
            <td><Ago at={j.createdAt} now={ctx.now} /></td><td><Ago at={j.finishedAt} now={ctx.now} /></td>
          </tr>
        ))}>
        <div class="pager">
          {query.before !== undefined && <a href={`${ctx.base}/jobs?${filters}`}>Newest</a>}
          {older.has("before") && <a href={`${ctx.base}/jobs?${older}`} rel="next">Older</a>}
        </div>
      </TableCard>
    </Layout>
  );
}

const json = (value: unknown) => JSON.stringify(value, null, 2) ?? "null";

/** One job: its fields, args, result, progress, log, errors and the actions its state allows. @example c.html(<JobPage ctx={ctx} job={job} />) */
export function JobPage(props: { ctx: PageContext; job: JobDetail; notice?: string }) {
  const { ctx, job } = props;
  const action = (name: string) => `${ctx.base}/jobs/${job.id}/${name}`;
  const ran = job.startedAt && job.finishedAt ? formatSpan(Date.parse(job.finishedAt) - Date.parse(job.startedAt)) : null;
  const fields: [string, unknown][] = [
    ["Queue", <a href={`${ctx.base}/jobs?queue=${encodeURIComponent(job.queue)}`}>{job.queue}</a>],
    ["Attempts", `${job.attempt} of ${job.maxAttempts}`],
    ["Priority", job.priority],
    ["Created", <Time at={job.createdAt} ctx={ctx} />],
    ["Run at", <Time at={job.runAt} ctx={ctx} />],
    ["Started", <Time at={job.startedAt} ctx={ctx} />],
    ["Finished", <>{<Time at={job.finishedAt} ctx={ctx} />}{ran && <span class="muted"> (last run took {ran})</span>}</>],
    ["Expires", <Time at={job.expiresAt} ctx={ctx} />],
    ["Unique key", job.uniqueKey ?? "-"],
    ["Limit key", job.limitKey ?? "-"],
    ["Fair key", job.fairKey === null ? "-" : job.fairSubKey === null ? job.fairKey : `${job.fairKey} / ${job.fairSubKey}`],
    ["Lease", job.leaseOwner ? <>{job.leaseOwner}, until <Time at={job.leaseExpiresAt} ctx={ctx} /></> : "-"],
    ["Cancel requested", job.cancelRequested ? "yes" : "no"],
    ["Replay of", job.replayOf === null ? "-" : <a href={`${ctx.base}/jobs/${job.replayOf}`}>job {job.replayOf}</a>],
  ];
  const finished = (FINISHED_STATES as readonly string[]).includes(job.state);
  return (
    <Layout ctx={ctx} title={`Job ${job.id}`} active="jobs">
      <h1>Job {job.id} · {job.task} <Badge value={job.state} /></h1>
      <Notice text={props.notice} />
      <div class="card">
        <dl>{fields.map(([label, value]) => <><dt>{label}</dt><dd>{value as string}</dd></>)}</dl>
        {(finished || job.state === "queued" || job.state === "running") && (
          <p style="margin:14px 0 0">
            {job.state === "failed" && <Post ctx={ctx} action={action("requeue")} label="Requeue" kind="primary" />}
            {(job.state === "queued" || job.state === "running") && <Post ctx={ctx} action={action("cancel")} label="Cancel" kind="danger" />}
            {finished && <Post ctx={ctx} action={action("replay")} label="Replay as a new job" />}
          </p>
        )}
      </div>
      <div class="grid">
        <div class="card"><h2>Args</h2><pre id="args">{json(job.args)}</pre></div>
        <div class="card"><h2>Result</h2>{job.result === null ? <p class="empty">No result.</p> : <pre id="result">{json(job.result)}</pre>}</div>
      </div>
      {job.progressAt !== null && (
        <div class="card" style="margin-top:18px" id="progress">
          <h2>Progress <span class="muted">(<Time at={job.progressAt} ctx={ctx} />)</span></h2>
          <pre>{json(job.progress)}</pre>
        </div>
      )}
      {(job.logs.length > 0 || job.logsDropped > 0) && (
        <div class="card" style="margin-top:18px" id="logs">
          <h2>Log ({job.logs.length}{job.logsDropped > 0 ? `, ${job.logsDropped} dropped: the log was full` : ""})</h2>
          <table>
            <thead><tr><th>Attempt</th><th>At</th><th>Line</th></tr></thead>
            <tbody>{job.logs.map((l) => (
              <tr><td>{l.attempt}</td><td>{formatTime(l.at)}</td><td><pre class="message">{l.message}</pre></td></tr>
            ))}</tbody>
          </table>
        </div>
      )}
      {job.steps && (
        <div class="card" style="margin-top:18px" id="steps">
          <h2>Steps ({job.steps.length})</h2>
          <table>
            <thead><tr><th>#</th><th>Step</th><th>Kind</th><th>State</th><th>Attempts</th><th>Result, error or what it waits for</th></tr></thead>
            <tbody>{job.steps.map((st) => (
              <tr>
                <td>{st.seq + 1}</td><td>{st.name}</td><td>{st.kind}</td><td><Badge value={st.state} /></td><td>{st.attempts}</td>
                <td>{stepWaitText(st) ?? (st.state === "done" || st.state === "timed_out"
                  ? (st.hasResult ? <pre>{json(st.result)}</pre> : <span class="muted">-</span>)
                  : <pre class="message">{st.errors.at(-1)?.message ?? "-"}</pre>)}</td>
              </tr>
            ))}</tbody>
          </table>
        </div>
      )}
      <div class="card" style="margin-top:18px" id="errors">
        <h2>Errors ({job.errors.length})</h2>
        {job.errors.length === 0 ? <p class="empty">No failed attempts.</p> : [...job.errors].reverse().map((e) => (
          <div class="err">
            <div><b>Attempt {e.attempt}</b> · {e.kind} · <Time at={e.at} ctx={ctx} /></div>
            <pre class="message">{e.message}</pre>
            {e.stack && <details><summary>Stack</summary><pre>{e.stack}</pre></details>}
          </div>
        ))}
      </div>
    </Layout>
  );
}

function Time(props: { at: string | null; ctx: PageContext }) {
  if (!props.at) return <span class="muted">-</span>;
  return <>{formatTime(props.at)} <span class="muted">(<Ago at={props.at} now={props.ctx.now} />)</span></>;
}
