// The dashboard over real Requests and real databases: its pages and data on every driver, its session
// and CSRF rules, and that the JSON routes and apps without it are unchanged. The browser suite is
// test/edge/dashboard/dashboard-in-chromium.test.ts.
import { describe, expect, it } from "vitest";
import { Hono } from "hono";
import { createApp, createSchedule, Fail, listSchedules, runOnce } from "akadze";
import { akadzeRoutes } from "akadze/hono";
import { akadzeDashboard } from "akadze/dashboard";
import { listJobs } from "../../../src/ops/jobs.js";
import { readThroughput } from "../../../src/ops/throughput.js";
import { forEachDriver, type Harness } from "../../support/drivers.js";
import { ManualClock } from "../../support/clock.js";

const SECRET = "dashboard-secret";

function setup(h: () => Harness, options: { origin?: string; sessionTtl?: "1h" } = {}) {
  const clock = new ManualClock();
  const app = createApp({ clock: clock.now });
  const ok = app.task("mail.send", { queue: "mail" }, async () => ({ sent: true }));
  const broken = app.task("report.build", { queue: "reports", maxAttempts: 1 }, async () => { throw new Fail("no such month: 2026-13"); });
  const dashboard = akadzeDashboard({ now: clock.now, sessionTtl: options.sessionTtl });
  const web = new Hono().route("/akadze", akadzeRoutes(app, { db: h().db, secret: SECRET, dashboard }));
  const origin = options.origin ?? "http://127.0.0.1:4000";
  let cookie = "";
  const request = (path: string, init: RequestInit = {}) =>
    web.fetch(new Request(`${origin}${path}`, { ...init, headers: { ...(cookie ? { cookie } : {}), ...init.headers as object } }));
  const form = (fields: Record<string, string>) => ({
    method: "POST", body: new URLSearchParams(fields).toString(), headers: { "content-type": "application/x-www-form-urlencoded" },
  });
  async function signIn(secret = SECRET) {
    const res = await request("/akadze/ui/login", form({ secret }));
    const set = res.headers.get("set-cookie");
    if (set) cookie = set.split(";")[0];
    return res;
  }
  /** The CSRF token of a signed-in page's forms. */
  async function csrf() {
    const page = await (await request("/akadze/ui")).text();
    return /name="_csrf" value="([^"]+)"/.exec(page)![1];
  }
  const run = () => runOnce(app, { db: h().db, now: clock.now });
  return { clock, app, ok, broken, web, request, form, signIn, csrf, run, setCookie: (c: string) => { cookie = c; } };
}

forEachDriver((h) => {
  it("the overview shows queues, the hour's throughput, limits, schedules and invocations", async () => {
    const t = setup(h);
    t.app.periodic("report.hourly", { cron: "0 * * * *" }, async () => {});
    await t.ok.using(h().db).enqueueMany([{}, {}]);
    await t.broken.using(h().db).enqueue({});
    await t.run();
    await t.app.task("later", { queue: "mail" }, async () => {}).using(h().db, { delay: "1h" }).enqueue({});
    expect((await t.signIn()).status).toBe(303);
    const res = await t.request("/akadze/ui");
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page.startsWith("<!doctype html><html")).toBe(true); // standards mode
    expect(page).toMatch(/<tr data-queue="mail">.*?>2<\/a><\/td>.*?<\/tr>/s); // two succeeded
    expect(page).toContain('id="done-count">3<'); // the two mails and the schedule's first slot
    expect(page).toContain('id="failed-count">1<');
    expect(page).toContain("report.hourly");
    expect(page).toContain("cron &quot;0 * * * *&quot;"); // escaped, as all output is
    expect(page).toContain("invocation");
  });

  it("the jobs list filters by state, queue and task, and pages newest first", async () => {
    const t = setup(h);
    const ids = await t.ok.using(h().db).enqueueMany(Array.from({ length: 55 }, () => ({})));
    const failedId = await t.broken.using(h().db).enqueue({});
    await t.signIn();
    const first = await (await t.request("/akadze/ui/jobs?queue=mail")).text();
    const shown = [...first.matchAll(/<tr data-job="(\d+)"/g)].map((m) => Number(m[1]));
    expect(shown).toEqual([...ids].reverse().slice(0, 50));
    const next = /href="([^"]+)" rel="next"/.exec(first)![1].replace(/&amp;/g, "&");
    const second = await (await t.request(next)).text();
    expect([...second.matchAll(/<tr data-job="(\d+)"/g)].map((m) => Number(m[1]))).toEqual([...ids].reverse().slice(50));
    expect(second).not.toContain('rel="next"');
    const byTask = await (await t.request("/akadze/ui/jobs?task=report.build&state=queued")).text();
    expect([...byTask.matchAll(/<tr data-job="(\d+)"/g)].map((m) => Number(m[1]))).toEqual([failedId]);
    expect((await t.request("/akadze/ui/jobs?state=done")).status).toBe(400);
  });

  it("a requeue or cancel from the dashboard reaches the app's transition hooks, as from the routes", async () => {
    const t = setup(h);
    const seen: string[] = [];
    t.app.hooks.onTransition((tr) => { if (tr.from !== "queued" || tr.to !== "running") seen.push(`${tr.jobId} ${tr.from}->${tr.to}`); });
    const id = await t.broken.using(h().db).enqueue({});
    const queuedId = await t.ok.using(h().db, { delay: "1h" }).enqueue({});
    await t.run();
    seen.length = 0;
    await t.signIn();
    const token = await t.csrf();
    expect((await t.request(`/akadze/ui/jobs/${id}/requeue`, t.form({ _csrf: token }))).status).toBe(303);
    expect((await t.request(`/akadze/ui/jobs/${queuedId}/cancel`, t.form({ _csrf: token }))).status).toBe(303);
    expect(seen).toEqual([`${id} failed->queued`, `${queuedId} queued->cancelled`]);
  });

  it("a job page shows args, attempts and the error history; requeue and cancel change the job", async () => {
    const t = setup(h);
    const id = await t.broken.using(h().db, { fairKey: "tenant-42" }).enqueue({});
    const queuedId = await t.ok.using(h().db, { delay: "1h" }).enqueue({});
    await t.run();
    await t.signIn();
    const page = await (await t.request(`/akadze/ui/jobs/${id}`)).text();
    expect(page).toContain("no such month: 2026-13");
    expect(page).toContain("1 of 1");
    expect(page).toContain("tenant-42");
    const token = await t.csrf();
    const requeued = await t.request(`/akadze/ui/jobs/${id}/requeue`, t.form({ _csrf: token }));
    expect(requeued.status).toBe(303);
    expect(requeued.headers.get("location")).toBe(`/akadze/ui/jobs/${id}?done=requeued`);
    expect((await h().rows(`select state from akadze.all_jobs where id = ${id}`))[0].state).toBe("queued");
    expect((await t.request(`/akadze/ui/jobs/${id}/requeue`, t.form({ _csrf: token }))).status).toBe(409);
    expect((await t.request(`/akadze/ui/jobs/${queuedId}/cancel`, t.form({ _csrf: token }))).status).toBe(303);
    expect((await h().rows(`select state from akadze.all_jobs where id = ${queuedId}`))[0].state).toBe("cancelled");
    expect((await t.request("/akadze/ui/jobs/999999")).status).toBe(404);
  });

  it("a job page shows the job's last progress and its log lines with their attempts, and the lines dropped", async () => {
    const t = setup(h);
    const chatty = t.app.task("import.rows", async (_args, job) => {
      for (let i = 1; i <= 205; i++) job.log(`row ${i} <ok>`);
      job.progress({ rows: 205 });
    });
    const id = await chatty.using(h().db).enqueue({});
    await t.run();
    await t.signIn();
    const page = await (await t.request(`/akadze/ui/jobs/${id}`)).text();
    expect(page).toMatch(/id="progress"><h2>Progress .*?<\/h2><pre>\{\s*(&quot;|")rows(&quot;|"): 205\s*\}<\/pre>/s);
    expect(page).toContain("Log (200, 5 dropped: the log was full)");
    expect(page).toMatch(/<tr><td>1<\/td><td>[^<]+<\/td><td><pre class="message">row 1 &lt;ok&gt;<\/pre><\/td><\/tr>/);
    const quiet = await t.ok.using(h().db).enqueue({});
    await t.run();
    const plain = await (await t.request(`/akadze/ui/jobs/${quiet}`)).text();
    expect(plain).not.toContain('id="progress"');
    expect(plain).not.toContain('id="logs"');
  });

  it("a finished job replays from its page, and a filtered list's buttons act on what it shows, labelled with their dry run", async () => {
    const t = setup(h);
    const failed = await t.broken.using(h().db).enqueue({});
    await t.run();
    const [queued] = await t.ok.using(h().db, { delay: "1h" }).enqueueMany([{}, {}]);
    await t.signIn();
    const token = await t.csrf();
    expect(await (await t.request(`/akadze/ui/jobs/${queued}`)).text()).not.toContain("Replay as a new job");
    const replayed = await t.request(`/akadze/ui/jobs/${failed}/replay`, t.form({ _csrf: token }));
    expect(replayed.status).toBe(303);
    const location = replayed.headers.get("location")!;
    const newId = Number(/\/jobs\/(\d+)\?done=replayed$/.exec(location)![1]);
    const page = await (await t.request(location)).text();
    expect(page).toContain(`<a href="/akadze/ui/jobs/${failed}">job ${failed}</a>`); // replay of
    expect(page).toContain("Replayed: this is the new job");
    expect((await t.request(`/akadze/ui/jobs/${newId}/replay`, t.form({ _csrf: token }))).status).toBe(409);

    const list = await (await t.request("/akadze/ui/jobs?queue=mail&state=queued")).text();
    expect(list).toMatch(/id="bulk".*Cancel 2 jobs/s);
    expect(list).not.toMatch(/Requeue \d+ job|Replay \d+ job/);
    expect(await (await t.request("/akadze/ui/jobs")).text()).not.toContain('id="bulk"'); // no filter, no bulk action
    const cancelled = await t.request("/akadze/ui/bulk/cancel", t.form({ _csrf: token, queue: "mail", state: "queued", task: "" }));
    expect(cancelled.status, await cancelled.clone().text()).toBe(303);
    expect(cancelled.headers.get("location")).toBe("/akadze/ui/jobs?state=queued&queue=mail&done=cancel&count=2");
    expect(await (await t.request(cancelled.headers.get("location")!)).text()).toContain("2 jobs cancelled or asked to stop.");
    expect(await h().rows("select count(*)::int as n from akadze.all_jobs where state = 'cancelled'")).toEqual([{ n: 2 }]);
    expect((await t.request("/akadze/ui/bulk/requeue", t.form({ _csrf: token, state: "queued" }))).status).toBe(400);
    expect((await t.request("/akadze/ui/bulk/explode", t.form({ _csrf: token, state: "failed" }))).status).toBe(400);
    expect((await t.request("/akadze/ui/bulk/requeue", t.form({ _csrf: "x".repeat(24), state: "failed" }))).status).toBe(403);
  });

  it("the overview lists runtime schedules, one tenant's with ?tenant=, and pauses and resumes them", async () => {
    const t = setup(h);
    await createSchedule(h().db, { name: "t1.mail", tenant: "t1", task: "mail.send", every: "1h", catchUp: { all: 3 } }, { app: t.app });
    await createSchedule(h().db, { name: "t2.mail", tenant: "t2", task: "mail.send", cron: "0 9 * * *" }, { app: t.app });
    await t.signIn();
    const token = await t.csrf();
    const page = await (await t.request("/akadze/ui")).text();
    expect(page).toMatch(/<tr data-schedule="t1.mail">.*?tenant <a href="\/akadze\/ui\?tenant=t1">t1<\/a>.*?every 3600000 ms.*?catch up 3.*?>Pause<\/button>.*?<\/tr>/s);
    const one = await (await t.request("/akadze/ui?tenant=t2")).text();
    expect(one).toContain("Schedules of tenant t2");
    expect([...one.matchAll(/data-schedule="([^"]+)"/g)].map((m) => m[1])).toEqual(["t2.mail"]);
    const paused = await t.request("/akadze/ui/schedules/t1.mail/pause", t.form({ _csrf: token }));
    expect(paused.status).toBe(303);
    expect(await (await t.request(paused.headers.get("location")!)).text()).toMatch(/Schedule paused.*<tr data-schedule="t1.mail">.*?paused.*?>Resume<\/button>/s);
    expect((await listSchedules(h().db, { tenant: "t1" }))[0].paused).toBe(true);
    expect((await t.request("/akadze/ui/schedules/t1.mail/resume", t.form({ _csrf: token }))).status).toBe(303);
    expect((await listSchedules(h().db, { tenant: "t1" }))[0].paused).toBe(false);
    expect((await t.request("/akadze/ui/schedules/nope/pause", t.form({ _csrf: token }))).status).toBe(404);
    expect((await t.request("/akadze/ui/schedules/t2.mail/pause", t.form({ _csrf: "x".repeat(24) }))).status).toBe(403);
  });

  it("a runtime schedule is created, edited and deleted through the dashboard's forms", async () => {
    const t = setup(h);
    await t.signIn();
    const token = await t.csrf();
    const blank = await (await t.request("/akadze/ui/schedules/new?tenant=t1")).text();
    expect(blank).toMatch(/<select name="task"[^>]*><option value="mail.send"[^>]*>mail.send<\/option><option value="report.build"/);
    expect(blank).toContain('name="tenant" value="t1"');
    const fields = { _csrf: token, name: "t1.mail", tenant: "t1", task: "mail.send", cron: "", timezone: "", every: "1h",
      args: '{"to": "ops@example.com"}', catchUp: "3", overlap: "allow" };
    const created = await t.request("/akadze/ui/schedules/new", t.form(fields));
    expect(created.status, await created.clone().text()).toBe(303);
    expect(await (await t.request(created.headers.get("location")!)).text()).toMatch(/Schedule created.*<tr data-schedule="t1.mail">.*?every 3600000 ms.*?catch up 3.*?>Edit<\/a>/s);
    const [made] = await listSchedules(h().db, { tenant: "t1" });
    expect(made).toMatchObject({ name: "t1.mail", task: "mail.send", runtime: true, args: { to: "ops@example.com" }, catchUp: { all: 3 }, overlap: "allow" });

    const edit = await (await t.request("/akadze/ui/schedules/t1.mail/edit")).text();
    expect(edit).toContain('name="every" value="3600000"');
    expect(edit).toContain('name="catchUp" value="3"');
    expect(edit).toMatch(/Delete schedule t1.mail/);
    const saved = await t.request("/akadze/ui/schedules/t1.mail/edit", t.form({ ...fields, name: "", cron: "0 9 * * *", timezone: "Europe/Berlin", every: "" }));
    expect(saved.status, await saved.clone().text()).toBe(303);
    expect(saved.headers.get("location")).toBe("/akadze/ui?done=scheduleUpdated");
    expect((await listSchedules(h().db, { tenant: "t1" }))[0]).toMatchObject({ name: "t1.mail", schedule: 'cron "0 9 * * *" Europe/Berlin', catchUp: { all: 3 } });
    // An edit that leaves the timing as it was keeps the pending slot, even later.
    const before = (await listSchedules(h().db, { tenant: "t1" }))[0].nextSlot;
    t.clock.advance(26 * 3_600_000);
    await t.signIn(); // the session lasts 12 h
    const token2 = await t.csrf();
    const argsOnly = await t.request("/akadze/ui/schedules/t1.mail/edit", t.form({ ...fields, _csrf: token2, cron: "0 9 * * *", timezone: "Europe/Berlin", every: "", args: "{}" }));
    expect(argsOnly.status).toBe(303);
    expect((await listSchedules(h().db, { tenant: "t1" }))[0]).toMatchObject({ args: {}, nextSlot: before });

    const deleted = await t.request("/akadze/ui/schedules/t1.mail/delete", t.form({ _csrf: token2 }));
    expect(deleted.status).toBe(303);
    expect(await (await t.request(deleted.headers.get("location")!)).text()).toContain("Schedule deleted");
    expect(await listSchedules(h().db, { tenant: "t1" })).toEqual([]);
    expect((await t.request("/akadze/ui/schedules/t1.mail/delete", t.form({ _csrf: token2 }))).status).toBe(404);
    expect((await t.request("/akadze/ui/schedules/t1.mail/edit")).status).toBe(404);
  });

  it("bad schedule input sends the form back with the reason and changes nothing; schedules in code are not the dashboard's", async () => {
    const t = setup(h);
    t.app.periodic("report.hourly", { cron: "0 * * * *" }, async () => {});
    await createSchedule(h().db, { name: "taken", tenant: "t1", task: "mail.send", every: "1h" }, { app: t.app });
    await t.signIn();
    const token = await t.csrf();
    const good = { _csrf: token, name: "fresh", tenant: "t1", task: "mail.send", cron: "0 9 * * *", timezone: "", every: "", args: "{}", catchUp: "latest", overlap: "allow" };
    const stored = async () => (await listSchedules(h().db, { tenant: "t1" })).map((s) => [s.name, s.schedule, s.args]);
    const was = await stored();
    for (const [change, status, message] of [
      [{ args: "{to: 1" }, 400, "args must be JSON"],
      [{ task: "no.such.task" }, 400, "which is not registered in this app"],
      [{ cron: "every day at nine" }, 400, "bad cron expression"],
      [{ cron: "", every: "" }, 400, "give either cron or every"],
      [{ catchUp: "3", overlap: "skip" }, 400, "which overlap &quot;skip&quot; forbids"],
      [{ name: "taken" }, 409, "already exists"],
      [{ name: "report.hourly" }, 400, "defined in the app&#39;s code"],
    ] as [Record<string, string>, number, string][]) {
      const res = await t.request("/akadze/ui/schedules/new", t.form({ ...good, ...change }));
      const page = await res.text();
      expect(res.status, `${JSON.stringify(change)}: ${page}`).toBe(status);
      expect(page).toContain(message);
      expect(page).toContain(`name="name" value="${change.name ?? "fresh"}"`); // the form keeps what was typed
    }
    const badEdit = await t.request("/akadze/ui/schedules/taken/edit", t.form({ ...good, every: "1h", cron: "", args: "[1," }));
    expect(badEdit.status).toBe(400);
    expect(await badEdit.text()).toMatch(/args must be JSON.*name="every" value="1h"/s);
    // Without the session's CSRF token: refused, nothing made, changed or deleted.
    for (const csrf of [{}, { _csrf: "x".repeat(24) }] as Record<string, string>[]) {
      const { _csrf: _, ...rest } = good;
      expect((await t.request("/akadze/ui/schedules/new", t.form({ ...rest, ...csrf }))).status).toBe(403);
      expect((await t.request("/akadze/ui/schedules/taken/edit", t.form({ ...rest, name: "taken", every: "5m", cron: "", ...csrf }))).status).toBe(403);
      expect((await t.request("/akadze/ui/schedules/taken/delete", t.form(csrf))).status).toBe(403);
    }
    expect(await stored()).toEqual(was);

    // A schedule in code has no Edit link, and its edit page, edit and delete say why not.
    const page = await (await t.request("/akadze/ui")).text();
    const row = /<tr data-schedule="report.hourly">.*?<\/tr>/s.exec(page)![0];
    expect(row).not.toMatch(/Edit|Delete|Pause/);
    expect(page).toMatch(/<tr data-schedule="taken">.*?>Edit<\/a>.*?<\/tr>/s);
    for (const res of [await t.request("/akadze/ui/schedules/report.hourly/edit"),
      await t.request("/akadze/ui/schedules/report.hourly/edit", t.form({ ...good, name: "report.hourly" })),
      await t.request("/akadze/ui/schedules/report.hourly/delete", t.form({ _csrf: token }))]) {
      expect(res.status, await res.clone().text()).toBe(409);
      expect(await res.text()).toContain("is defined in the app&#39;s code: change or remove it there");
    }
    expect((await listSchedules(h().db, { app: t.app })).map((s) => s.name)).toEqual(["report.hourly", "taken"]);
  });

  it("throughput counts the jobs finished in each slice of the last hour", async () => {
    const t = setup(h);
    await t.ok.using(h().db).enqueue({});
    await t.run(); // finishes at 12:00: 20 minutes into the hour before 12:40, the 5th slice
    t.clock.advance(30 * 60_000);
    await t.broken.using(h().db).enqueue({});
    await t.ok.using(h().db).enqueue({});
    await t.run(); // 12:30: the 11th slice
    const now = t.clock.advance(10 * 60_000);
    const { buckets, succeeded, failed, bucketMs } = await readThroughput(h().db, { now });
    expect(bucketMs).toBe(5 * 60_000);
    expect([succeeded, failed]).toEqual([2, 1]);
    expect(buckets.map((b) => [b.succeeded, b.failed])).toEqual([
      [0, 0], [0, 0], [0, 0], [0, 0], [1, 0], [0, 0], [0, 0], [0, 0], [0, 0], [0, 0], [1, 1], [0, 0]]);
    expect(buckets[0].start).toBe(new Date(now.getTime() - 3_600_000).toISOString());
    const later = await readThroughput(h().db, { now: t.clock.advance(60 * 60_000) });
    expect([later.succeeded, later.failed]).toEqual([0, 0]);
  });

  it("listJobs' beforeId pages by id, and a bad one is refused", async () => {
    const t = setup(h);
    const ids = await t.ok.using(h().db).enqueueMany([{}, {}, {}]);
    expect((await listJobs(h().db, { beforeId: ids[2], limit: 1 })).map((j) => j.id)).toEqual([ids[1]]);
    await expect(listJobs(h().db, { beforeId: 0 })).rejects.toThrow(/beforeId must be at least 1/);
  });
});

describe("dashboard options", () => {
  it("a bad sessionTtl or throughput window is a clear error naming it", async () => {
    expect(() => akadzeDashboard({ sessionTtl: "soon" as never })).toThrow(/sessionTtl must be milliseconds/);
    expect(() => akadzeDashboard({ sessionTtl: 10 })).toThrow(/sessionTtl must be at least 1s/);
    const db = undefined as never; // refused before any query
    await expect(readThroughput(db, { buckets: 0 })).rejects.toThrow(/buckets must be a whole number/);
    await expect(readThroughput(db, { window: "an hour" as never })).rejects.toThrow(/window must be milliseconds/);
  });
});

describe("dashboard sessions and CSRF", () => {
  forEachDriver((h) => {
    it("a wrong secret is refused and sets no cookie", async () => {
      const t = setup(h);
      for (const secret of ["wrong", "", `${SECRET} `]) {
        const res = await t.signIn(secret);
        expect(res.status).toBe(401);
        expect(res.headers.get("set-cookie")).toBeNull();
        expect(await res.text()).toContain("Wrong secret.");
      }
    });

    it("the session cookie is signed, HttpOnly, SameSite=Strict, scoped to the dashboard and Secure whatever the Host", async () => {
      const local = await setup(h).signIn();
      const cookie = local.headers.get("set-cookie")!;
      expect(cookie).toMatch(/^akadze_session=[^;]+\.[^;]+;/);
      expect(cookie).toMatch(/; Max-Age=43200/);
      expect(cookie).toMatch(/; Path=\/akadze\/ui/);
      expect(cookie).toMatch(/; HttpOnly/);
      expect(cookie).toMatch(/; SameSite=Strict/);
      expect(cookie).toMatch(/; Secure/);
      const remote = (await setup(h, { origin: "https://jobs.example.com" }).signIn()).headers.get("set-cookie")!;
      expect(remote).toMatch(/; Secure/);
    });

    it("without a valid session nothing is readable or changeable", async () => {
      const t = setup(h);
      const id = await t.broken.using(h().db).enqueue({});
      await t.run();
      for (const path of ["/akadze/ui", `/akadze/ui/jobs/${id}`, "/akadze/ui/jobs", "/akadze/ui/nope"]) {
        const res = await t.request(path);
        expect(res.status).toBe(401);
        expect(await res.text()).not.toContain("no such month");
      }
      expect((await t.request(`/akadze/ui/jobs/${id}/requeue`, t.form({ _csrf: "x".repeat(24) }))).status).toBe(401);
      expect((await t.request("/akadze/ui/queues/mail/pause", t.form({}))).status).toBe(401);
      // A forged cookie, and a real one signed for another secret.
      t.setCookie("akadze_session=99999999999999.aaaaaaaaaaaaaaaaaaaaaaaa.c2lnbmF0dXJl");
      expect((await t.request("/akadze/ui")).status).toBe(401);
      const other = new Hono().route("/akadze", akadzeRoutes(t.app, { db: h().db, secret: "another", dashboard: akadzeDashboard() }));
      const foreign = await other.fetch(new Request("http://127.0.0.1/akadze/ui/login", t.form({ secret: "another" })));
      t.setCookie(foreign.headers.get("set-cookie")!.split(";")[0]);
      expect((await t.request("/akadze/ui")).status).toBe(401);
      expect((await h().rows(`select state from akadze.all_jobs where id = ${id}`))[0].state).toBe("failed");
      expect((await h().rows("select * from akadze.queues"))).toEqual([]);
    });

    it("a session expires after sessionTtl", async () => {
      const t = setup(h, { sessionTtl: "1h" });
      await t.signIn();
      expect((await t.request("/akadze/ui")).status).toBe(200);
      t.clock.advance(59 * 60_000);
      expect((await t.request("/akadze/ui")).status).toBe(200);
      t.clock.advance(60_000);
      expect((await t.request("/akadze/ui")).status).toBe(401);
    });

    it("a POST without the session's CSRF token is refused and changes nothing", async () => {
      const t = setup(h);
      const id = await t.broken.using(h().db).enqueue({});
      await t.run();
      await t.signIn();
      const token = await t.csrf();
      for (const fields of [{}, { _csrf: "" }, { _csrf: `${token.slice(1)}x` }] as Record<string, string>[]) {
        expect((await t.request(`/akadze/ui/jobs/${id}/requeue`, t.form(fields))).status).toBe(403);
        expect((await t.request("/akadze/ui/queues/reports/pause", t.form(fields))).status).toBe(403);
      }
      expect((await h().rows(`select state from akadze.all_jobs where id = ${id}`))[0].state).toBe("failed");
      expect((await h().rows("select * from akadze.queues"))).toEqual([]);
      // Signing out ends the session: the cookie is cleared and the old token opens nothing.
      const out = await t.request("/akadze/ui/logout", t.form({ _csrf: token }));
      expect(out.status).toBe(303);
      expect(out.headers.get("set-cookie")).toMatch(/^akadze_session=;.*Max-Age=0/);
    });

    it("a signed-out session stays out: a copy of its cookie opens nothing, and a new sign-in works", async () => {
      const t = setup(h);
      const id = await t.broken.using(h().db).enqueue({});
      await t.run();
      const cookie = (await t.signIn()).headers.get("set-cookie")!.split(";")[0];
      const token = await t.csrf();
      expect((await t.request("/akadze/ui")).status).toBe(200);
      expect((await t.request("/akadze/ui/logout", t.form({ _csrf: token }))).status).toBe(303);
      // The browser dropped its cookie; a copy of it (another tab's, a stolen one) is replayed.
      t.setCookie(cookie);
      expect((await t.request("/akadze/ui")).status).toBe(401);
      expect((await t.request(`/akadze/ui/jobs/${id}/requeue`, t.form({ _csrf: token }))).status).toBe(401);
      expect((await t.request("/akadze/ui/logout", t.form({ _csrf: token }))).status).toBe(401);
      expect((await h().rows(`select state from akadze.all_jobs where id = ${id}`))[0].state).toBe("failed");
      await t.signIn();
      expect((await t.request("/akadze/ui")).status).toBe(200);
      // Sign-outs are kept only while their cookie could still be valid (12 h): the next sign-out forgets them.
      t.clock.advance(13 * 3_600_000);
      await t.signIn();
      expect((await t.request("/akadze/ui/logout", t.form({ _csrf: await t.csrf() }))).status).toBe(303);
      expect(await h().rows("select count(*)::int as n from akadze.dashboard_sign_outs")).toEqual([{ n: 1 }]);
    });

    it("the session cookie does not open the JSON routes, and the bearer secret does not open the pages", async () => {
      const t = setup(h);
      await t.signIn();
      const json = await t.request("/akadze/jobs");
      expect(json.status).toBe(401);
      expect((await t.web.fetch(new Request("http://127.0.0.1/akadze/ui", { headers: { authorization: `Bearer ${SECRET}` } }))).status).toBe(401);
    });

    it("routes without the dashboard have no /ui", async () => {
      const app = createApp();
      const web = new Hono().route("/akadze", akadzeRoutes(app, { db: h().db, secret: SECRET }));
      const res = await web.fetch(new Request("http://127.0.0.1/akadze/ui/login"));
      expect(res.status).toBe(401); // the bearer check answers first, as for any unknown akadze path
      const authed = await web.fetch(new Request("http://127.0.0.1/akadze/ui/login", { headers: { authorization: `Bearer ${SECRET}` } }));
      expect(authed.status).toBe(404);
    });
  }, ["pglite"]);
});
