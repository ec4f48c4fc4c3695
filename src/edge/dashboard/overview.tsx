// The overview: the last hour's throughput, every queue, limits, schedules and recent workers.
import { formatMs, formatSpan, formatTime } from "../../core/time-text.js";
import type { LimitRow } from "../../ops/limits.js";
import type { QueueRow } from "../../ops/queues.js";
import type { Throughput } from "../../ops/throughput.js";
import { DEFAULT_WORKERS_SINCE, type WorkerRow } from "../../ops/workers.js";
import type { ScheduleInfo } from "../../ops/schedules.js";
import { Ago, Badge, Layout, Notice, Post, TableCard, type PageContext } from "./layout.js";

/** Everything the overview shows, read before rendering. */
export interface OverviewData {
  queues: QueueRow[];
  throughput: Throughput;
  limits: LimitRow[];
  schedules: ScheduleInfo[];
  workers: WorkerRow[];
}

const COUNTS = ["due", "scheduled", "running", "succeeded", "failed", "cancelled"] as const;
// Counts of the history: estimated from a sample once it is large (QueueRow.estimated).
const ESTIMATED = new Set<string>(["succeeded", "cancelled"]);
// Which list a count links to: due and scheduled jobs are both `queued`.
const STATE_OF: Record<(typeof COUNTS)[number], string> = {
  due: "queued", scheduled: "queued", running: "running", succeeded: "succeeded", failed: "failed", cancelled: "cancelled",
};

/** The overview page. @example c.html(<OverviewPage ctx={ctx} data={data} />) */
export function OverviewPage(props: { ctx: PageContext; data: OverviewData; notice?: string; tenant?: string }) {
  const { ctx, data } = props;
  return (
    <Layout ctx={ctx} title="Overview" active="overview">
      <h1>Overview</h1>
      <Notice text={props.notice} />
      <ThroughputCard throughput={data.throughput} />
      <TableCard title="Queues" empty="No queue has jobs yet." tableId="queues"
        head={<><th>Queue</th>{COUNTS.map((k) => <th class="n">{k}</th>)}<th class="n">Oldest due</th><th></th></>}
        rows={data.queues.map((q) => (
          <tr data-queue={q.queue}>
            <td><a href={`${ctx.base}/jobs?queue=${encodeURIComponent(q.queue)}`}>{q.queue}</a> {q.paused && <Badge value="paused" />}</td>
            {COUNTS.map((k) => (
              <td class="n">{q[k] === 0 ? <span class="muted">0</span>
                : <a href={`${ctx.base}/jobs?queue=${encodeURIComponent(q.queue)}&state=${STATE_OF[k]}`}
                  title={q.estimated && ESTIMATED.has(k) ? "estimated from a sample of the history" : undefined}>{q.estimated && ESTIMATED.has(k) ? "≈" : ""}{q[k]}</a>}</td>
            ))}
            <td class="n">{q.oldestDueSeconds > 0 ? formatSpan(q.oldestDueSeconds * 1000) : <span class="muted">-</span>}</td>
            <td class="n">
              <Post ctx={ctx} action={`${ctx.base}/queues/${encodeURIComponent(q.queue)}/${q.paused ? "resume" : "pause"}`}
                label={q.paused ? "Resume" : "Pause"} kind={q.paused ? "primary" : undefined} />
            </td>
          </tr>
        ))} />
      <div class="grid">
        <LimitsCard limits={data.limits} />
        <SchedulesCard schedules={data.schedules} ctx={ctx} tenant={props.tenant} />
      </div>
      <div style="height:18px" />
      <WorkersCard workers={data.workers} ctx={ctx} />
    </Layout>
  );
}

function ThroughputCard(props: { throughput: Throughput }) {
  const { buckets, bucketMs, succeeded, failed } = props.throughput;
  const width = 24;
  const height = 80;
  const max = Math.max(1, ...buckets.map((b) => b.succeeded + b.failed));
  const scale = (n: number) => (n / max) * (height - 4);
  return (
    <div class="card">
      <h2>Finished in the last {formatSpan(bucketMs * buckets.length)}</h2>
      <div class="chart">
        <div class="legend"><b class="ok" id="done-count">{succeeded}</b>succeeded</div>
        <div class="legend"><b class="bad" id="failed-count">{failed}</b>failed</div>
        <div class="bars">
          <svg viewBox={`0 0 ${buckets.length * width} ${height}`} preserveAspectRatio="none" role="img"
            aria-label={`${succeeded} succeeded and ${failed} failed, per ${formatSpan(bucketMs)}`}>
            <line x1="0" y1={height - 0.5} x2={buckets.length * width} y2={height - 0.5} stroke="#cbd2d9" />
            {buckets.map((b, i) => {
              const ok = scale(b.succeeded);
              const bad = scale(b.failed);
              return (
                <g>
                  <title>{`${formatTime(b.start)} + ${formatSpan(bucketMs)}: ${b.succeeded} succeeded, ${b.failed} failed`}</title>
                  <rect x={i * width + 3} y={height - ok} width={width - 6} height={ok} fill="#3fa66a" />
                  <rect x={i * width + 3} y={height - ok - bad} width={width - 6} height={bad} fill="#d64545" />
                </g>
              );
            })}
          </svg>
          <div class="axis"><span>{formatSpan(bucketMs * buckets.length)} ago</span><span>now</span></div>
        </div>
      </div>
    </div>
  );
}

function LimitsCard(props: { limits: LimitRow[] }) {
  return (
    <TableCard title="Limits" empty="No limits set."
      head={<><th>Key</th><th class="n">Running</th><th class="n">Starts in window</th></>}
      rows={props.limits.map((l) => (
        <tr>
          <td>{l.key}</td>
          <td class="n">{l.maxRunning === null ? <span class="muted">-</span> : `${l.running} / ${l.maxRunning}`}</td>
          <td class="n">{l.maxStarts === null ? <span class="muted">-</span> : `${l.startsInWindow} / ${l.maxStarts} per ${formatMs(l.windowMs)}`}</td>
        </tr>
      ))} />
  );
}

/** The most schedules the overview lists; `?tenant=` narrows the card to one tenant's. */
export const SCHEDULES_SHOWN = 50;

function SchedulesCard(props: { schedules: ScheduleInfo[]; ctx: PageContext; tenant?: string }) {
  const { ctx } = props;
  const { now } = ctx;
  const shown = props.schedules.slice(0, SCHEDULES_SHOWN);
  const more = props.schedules.length - shown.length;
  return (
    <TableCard title={props.tenant === undefined ? "Schedules" : `Schedules of tenant ${props.tenant}`} empty="No schedules." tableId="schedules"
      head={<><th>Name</th><th>Schedule</th><th>Last slot</th><th>Next slot</th><th></th></>}
      rows={shown.map((s) => (
        <tr data-schedule={s.name}>
          <td>{s.name} {s.paused && <Badge value="paused" />}
            <div class="muted">{s.task}{s.tenant !== null && <> · tenant <a href={`${ctx.base}?tenant=${encodeURIComponent(s.tenant)}`}>{s.tenant}</a></>}</div></td>
          <td>{s.schedule ?? <span class="muted">not defined by this app</span>}
            {(s.catchUp !== "latest" || s.overlap === "skip") && <div class="muted">{s.catchUp === "latest" ? "" : `catch up ${s.catchUp.all}`}{s.overlap === "skip" ? " skip overlap" : ""}</div>}</td>
          <td><Ago at={s.lastSlot} now={now} /></td>
          <td>{s.paused ? <span class="muted">-</span> : <Ago at={s.nextSlot} now={now} />}</td>
          <td class="n">{s.runtime && <><a href={`${ctx.base}/schedules/${encodeURIComponent(s.name)}/edit`}>Edit</a>{" "}
            <Post ctx={ctx} action={`${ctx.base}/schedules/${encodeURIComponent(s.name)}/${s.paused ? "resume" : "pause"}`}
              label={s.paused ? "Resume" : "Pause"} kind={s.paused ? "primary" : undefined} /></>}</td>
        </tr>
      ))}>
      {more > 0 && <p class="muted">and {more} more: narrow to one tenant with ?tenant=, or use `akadze schedules list`.</p>}
      <p><a href={`${ctx.base}/schedules/new${props.tenant === undefined ? "" : `?tenant=${encodeURIComponent(props.tenant)}`}`} id="new-schedule">New schedule</a>
        <span class="muted"> (made at runtime; edit or delete one from its Edit link. Schedules in code change in code.)</span></p>
    </TableCard>
  );
}

function WorkersCard(props: { workers: WorkerRow[]; ctx: PageContext }) {
  const { now } = props.ctx;
  const since = DEFAULT_WORKERS_SINCE === "1h" ? "the last hour" : `the last ${DEFAULT_WORKERS_SINCE}`;
  return (
    <TableCard title={`Invocations and workers (live, or seen in ${since})`} empty={`None in ${since}.`}
      head={<><th>Id</th><th>Kind</th><th>Status</th><th>Queues</th><th class="n">Running</th><th class="n">Jobs done</th><th>Started</th><th>Last seen</th></>}
      rows={props.workers.map((w) => (
        <tr>
          <td>{w.id}{w.startedBy ? <div class="muted">started by {w.startedBy}</div> : null}</td><td>{w.kind}</td><td><Badge value={w.status} /></td>
          <td>{w.queues.length === 0 ? <span class="muted">all</span> : w.queues.join(", ")}</td>
          <td class="n">{w.running}</td><td class="n">{w.jobsDone}</td>
          <td><Ago at={w.startedAt} now={now} /></td><td><Ago at={w.lastSeenAt} now={now} /></td>
        </tr>
      ))} />
  );
}
