// renderMetrics: valid Prometheus text that a Prometheus parser reads back into the numbers we set up.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { createApp, Fail, pauseQueue, runOnce, setLimit } from "../../src/index.js";
import { escapeLabelValue, renderMetrics } from "../../src/ops/metrics.js";
import { listQueues } from "../../src/ops/queues.js";
import { query } from "../../src/db/query.js";
import { sql } from "drizzle-orm";
import { HISTORY_COUNT_ROWS, historyCounts } from "../../src/sql/history/history-counts.js";
import { ManualClock } from "../support/clock.js";
import { forEachDriver } from "../support/drivers.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";

let t: TestDatabase;
beforeAll(async () => { t = await openTestDatabase("ops_metrics"); });
afterAll(async () => { await t?.close(); });

type Family = { name: string; help: string; type: string; metrics: { value: string; labels?: Record<string, string> }[] };

function sample(families: Family[], name: string, labels: Record<string, string>): number | undefined {
  const family = families.find((f) => f.name === name);
  const found = family?.metrics.find((m) => JSON.stringify(m.labels ?? {}) === JSON.stringify(labels));
  return found === undefined ? undefined : Number(found.value);
}

const WEIRD = 'we"ird\\queue\nname';

describe("metrics", () => {
  it("render jobs, queues, recent failures, limits and workers as Prometheus text a parser reads back", async () => {
    const clock = new ManualClock();
    const app = createApp({ clock: clock.now });
    const ok = app.task("mail.send", { queue: "mail" }, async () => {});
    const flaky = app.task("mail.flaky", { queue: "mail", maxAttempts: 3, backoff: () => 60_000 }, async () => { throw new Error("smtp down"); });
    const doomed = app.task("report.build", { queue: WEIRD }, async () => { throw new Fail("bad"); });
    app.task("vendor.call", { queue: "vendor" }, async () => {});

    await ok.using(t.db).enqueueMany([{}, {}, {}]);
    await flaky.using(t.db).enqueueMany([{}, {}]);
    await doomed.using(t.db).enqueue({});
    await runOnce(app, { db: t.db, now: clock.now, id: "inv-metrics" });
    // Later: two mail jobs due and waiting 90 s, one scheduled for later, a paused queue, a limit in use.
    await ok.using(t.db, { delay: "10s" }).enqueueMany([{}, {}]);
    await ok.using(t.db, { delay: "1h" }).enqueue({});
    clock.advance(100_000);
    await pauseQueue(t.db, "vendor");
    await setLimit(t.db, "vendor", { maxRunning: 2, maxStarts: 10, window: "1m" });
    await t.rows(`update akadze.limit_slots set job_id = 999 where key = 'vendor' and slot = 1`);
    await t.rows(`update akadze.limit_tokens set last_start = $1 where key = 'vendor' and slot <= 3`, [new Date(clock.now().getTime() - 5000)]);
    await t.rows(`insert into akadze.jobs (task, queue, state, attempt, lease_owner, lease_expires_at, limit_key, started_at)
      values ('vendor.call', 'vendor', 'running', 1, 'inv-gone', $1, 'vendor', $2)`, [new Date(clock.now().getTime() - 1000), new Date(clock.now().getTime() - 5000)]);
    // Two more claimed by a worker and held in its local queue, not started: claimed, not running.
    await t.rows(`insert into akadze.jobs (task, queue, state, attempt, lease_owner, lease_expires_at)
      select 'vendor.call', 'vendor', 'running', 1, 'wrk-1', $1 from generate_series(1, 2)`, [new Date(clock.now().getTime() + 60_000)]);
    await t.rows(`insert into akadze.workers (id, kind, started_at, last_seen_at) values ('wrk-1', 'worker', $1, $1)`, [clock.now()]);

    const text = await renderMetrics(t.db, { now: clock.now() });
    const families = parsePrometheusTextFormat(text) as Family[];

    expect(text.endsWith("\n")).toBe(true);
    for (const line of text.trimEnd().split("\n")) {
      expect(line).toMatch(/^(# (HELP|TYPE) akadze_[a-z_]+ .+|akadze_[a-z_]+(\{([a-z_]+="([^"\\\n]|\\["\\n])*",?)+\})? -?[0-9.e+]+)$/);
    }
    for (const family of families) {
      expect(family.name).toMatch(/^akadze_/);
      expect(family.type).toBe("GAUGE");
      expect(family.help.length).toBeGreaterThan(10);
      const series = family.metrics.map((m) => JSON.stringify(m.labels ?? {}));
      expect(new Set(series).size).toBe(series.length);
    }

    expect(sample(families, "akadze_jobs", { queue: "mail", task: "mail.send", state: "succeeded" })).toBe(3);
    expect(sample(families, "akadze_jobs", { queue: "mail", task: "mail.send", state: "queued" })).toBe(3);
    expect(sample(families, "akadze_jobs", { queue: "mail", task: "mail.flaky", state: "queued" })).toBe(2);
    expect(sample(families, "akadze_jobs", { queue: WEIRD, task: "report.build", state: "failed" })).toBe(1);
    expect(sample(families, "akadze_queue_oldest_due_seconds", { queue: "mail" })).toBe(90);
    expect(sample(families, "akadze_queue_oldest_due_seconds", { queue: WEIRD })).toBe(0);
    expect(sample(families, "akadze_queue_running_jobs", { queue: "vendor" })).toBe(1);
    expect(sample(families, "akadze_queue_claimed_jobs", { queue: "vendor" })).toBe(2);
    expect(sample(families, "akadze_queue_claimed_jobs", { queue: "mail" })).toBe(0);
    expect((await listQueues(t.db, { now: clock.now() })).find((q) => q.queue === "vendor")).toMatchObject({ running: 1, claimed: 2 });
    expect(sample(families, "akadze_queue_expired_leases", { queue: "vendor" })).toBe(1);
    expect(sample(families, "akadze_queue_paused", { queue: "vendor" })).toBe(1);
    expect(sample(families, "akadze_queue_paused", { queue: "mail" })).toBe(0);
    expect(sample(families, "akadze_recent_failed_attempts", { queue: "mail", task: "mail.flaky" })).toBe(2);
    expect(sample(families, "akadze_recent_failed_attempts", { queue: WEIRD, task: "report.build" })).toBe(1);
    expect(sample(families, "akadze_recent_finished_jobs", { queue: "mail", task: "mail.send", state: "succeeded" })).toBe(3);
    expect(sample(families, "akadze_recent_finished_jobs", { queue: WEIRD, task: "report.build", state: "failed" })).toBe(1);
    expect(sample(families, "akadze_limit_running", { key: "vendor" })).toBe(1);
    expect(sample(families, "akadze_limit_max_running", { key: "vendor" })).toBe(2);
    expect(sample(families, "akadze_limit_starts_in_window", { key: "vendor" })).toBe(3);
    expect(sample(families, "akadze_limit_max_starts", { key: "vendor" })).toBe(10);
    expect(sample(families, "akadze_workers_live", { kind: "worker" })).toBe(1);
    expect(sample(families, "akadze_workers_live", { kind: "invocation" })).toBe(0); // inv-gone's lease expired

    // Past the 15 minute window the recent counts are gone, the table counts are not.
    const later = parsePrometheusTextFormat(await renderMetrics(t.db, { now: new Date(clock.now().getTime() + 20 * 60_000) })) as Family[];
    expect(sample(later, "akadze_recent_failed_attempts", { queue: "mail", task: "mail.flaky" })).toBeUndefined();
    expect(sample(later, "akadze_jobs", { queue: "mail", task: "mail.send", state: "succeeded" })).toBe(3);
    expect(sample(later, "akadze_workers_live", { kind: "worker" })).toBe(0);
  });

  it("label values escape backslash, double quote and newline", () => {
    expect(escapeLabelValue('a"b\\c\nd')).toBe('a\\"b\\\\c\\nd');
  });

  it("counts a large history from a bounded sample, and live jobs and dead letters exactly", async () => {
    await t.reset();
    const app = createApp();
    const ok = app.task("mail.send", { queue: "mail" }, async () => {});
    const doomed = app.task("mail.doomed", { queue: "mail" }, async () => { throw new Fail("bad"); });
    await ok.using(t.db).enqueueMany([{}, {}]);
    await doomed.using(t.db).enqueueMany([{}, {}, {}]);
    expect(await runOnce(app, { db: t.db, drain: false })).toMatchObject({ succeeded: 2, failed: 3 });
    const small = await listQueues(t.db);
    expect(small).toEqual([expect.objectContaining({ queue: "mail", succeeded: 2, failed: 3, estimated: false })]);

    // Two and a half times what a count reads row by row, finished over the last day, as a history holds them.
    const kept = Math.round(2.5 * HISTORY_COUNT_ROWS);
    await t.rows(`insert into akadze.job_history (id, task, queue, args, state, priority, attempt, max_attempts, run_at, cancel_requested, errors, created_at, started_at, finished_at)
      select -g, 'mail.send', 'mail', '{}', 'succeeded', 0, 1, 3, t, false, '[]', t, t, t
      from generate_series(1, ${kept}) g, lateral (select now() - random() * interval '1 day' as t) x`);
    await ok.using(t.db).enqueueMany([{}, {}, {}, {}]);
    await t.rows("analyze akadze.job_history");

    await t.rows("insert into akadze.queues (name, paused) values ('idle', false)");
    const [idle, mail] = await listQueues(t.db);
    expect(mail).toMatchObject({ queue: "mail", due: 4, running: 0, failed: 3, estimated: true });
    // Every queue's history counts are estimates then, a queue the sample missed too.
    expect(idle).toMatchObject({ queue: "idle", due: 0, estimated: true });
    expect(mail.succeeded).toBeGreaterThan(0.8 * kept);
    expect(mail.succeeded).toBeLessThan(1.2 * kept);
    const families = parsePrometheusTextFormat(await renderMetrics(t.db)) as Family[];
    expect(sample(families, "akadze_jobs", { queue: "mail", task: "mail.send", state: "queued" })).toBe(4);
    expect(sample(families, "akadze_jobs", { queue: "mail", task: "mail.doomed", state: "failed" })).toBe(3);
    const succeeded = sample(families, "akadze_jobs", { queue: "mail", task: "mail.send", state: "succeeded" })!;
    expect(succeeded).toBeGreaterThan(0.8 * kept);
    expect(succeeded).toBeLessThan(1.2 * kept);

    // What the count reads of the history: a sample of about HISTORY_COUNT_ROWS rows, not every row kept.
    const [explained] = await query<Record<string, unknown>>(t.db, sql`explain (analyze, format json) select * from (${historyCounts(["queue", "task", "state"])}) h`);
    const plan = Object.values(explained)[0];
    const scanned: number[] = [];
    const walk = (node: any) => { if (node["Node Type"] === "Sample Scan") scanned.push(node["Actual Rows"] * node["Actual Loops"]); for (const child of node.Plans ?? []) walk(child); };
    walk((plan as any)[0].Plan);
    const read = scanned.reduce((a, b) => a + b, 0);
    expect(scanned.length).toBeGreaterThan(0);
    expect(read).toBeLessThan(2 * HISTORY_COUNT_ROWS);
    expect(read).toBeGreaterThan(0.3 * HISTORY_COUNT_ROWS);
  });

  it("an empty database still renders every family with its HELP and TYPE", async () => {
    await t.reset();
    const families = parsePrometheusTextFormat(await renderMetrics(t.db)) as Family[];
    expect(families.map((f) => f.name)).toContain("akadze_jobs");
    expect(sample(families, "akadze_workers_live", { kind: "worker" })).toBe(0);
  });
});

forEachDriver((h) => {
  it("a throwing transition hook is counted in the metrics by queue and task, and not as a failed attempt", async () => {
    const app = createApp();
    app.hooks.onTransition((t) => { if (t.to === "failed") throw new Error("alerting is down"); });
    const doomed = app.task("report.build", { queue: "reports" }, async () => { throw new Fail("bad"); });
    app.task("mail.send", { queue: "mail" }, async () => {});
    await doomed.using(h().db).enqueueMany([{}, {}]);
    await app.taskByName("mail.send").using(h().db).enqueue({});
    expect(await runOnce(app, { db: h().db, drain: false })).toMatchObject({ succeeded: 1, failed: 2 });

    // The hook's failure is stamped with the host's clock, so the metrics read at the host's time.
    const families = parsePrometheusTextFormat(await renderMetrics(h().db)) as Family[];
    expect(sample(families, "akadze_recent_transition_hook_failures", { queue: "reports", task: "report.build" })).toBe(2);
    expect(sample(families, "akadze_recent_transition_hook_failures", { queue: "mail", task: "mail.send" })).toBeUndefined();
    expect(sample(families, "akadze_recent_failed_attempts", { queue: "reports", task: "report.build" })).toBe(2);
  });
});
