// The dashboard in headless Chromium (playwright-core) against real Postgres: sign in, read a failure and requeue it,
// pause a queue, make, edit and delete a runtime schedule; a wrong secret, a missing cookie or CSRF token are refused,
// and args holding <script> render as text.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import * as v from "valibot";
import { Hono } from "hono";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { createApp, Fail, listSchedules, pauseQueue, runOnce, setLimit } from "akadze";
import { akadzeRoutes } from "akadze/hono";
import { akadzeDashboard } from "akadze/dashboard";
import type { Served } from "../../../src/dev/serve.js";
import type { Harness } from "../../support/drivers.js";
import { ManualClock } from "../../support/clock.js";
import { openBrowserSetup, type BrowserSetup } from "../../support/browser.js";

// The Chromium is the one @sparticuz/chromium ships in its npm package (test/support/chromium.ts), so a fresh machine
// needs no install step; CHROMIUM_PATH picks another. AKADZE_DASHBOARD_SCREENSHOT=docs/dashboard-overview.png also saves
// the overview the docs show.

const SECRET = "browser-test-secret";

const clock = new ManualClock("2026-06-01T12:00:00Z");
const app = createApp({ clock: clock.now });
let vendorUp = false;
const report = app.task("reports.build", { queue: "reports", maxAttempts: 1, args: v.object({ month: v.string() }) }, async ({ month }) => {
  if (!vendorUp) throw new Fail(`vendor API down while building ${month}`);
  return { rows: 1200 };
});
const mail = app.task("mail.send", { queue: "mail", args: v.object({ to: v.string(), note: v.optional(v.string()) }) }, async () => ({ sent: true }));

let setup: BrowserSetup | undefined;
let h: Harness;
let served: Served;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const url = (path = "") => `${served.url}/akadze/ui${path}`;
const run = () => runOnce(app, { db: h.db, now: clock.now });

// A click that loads another page (a link, or a form whose POST redirects) resolves once that page has
// loaded, so what the test reads next is the new page and not the one it left.
async function clickAndLoad(p: Page, selector: string) {
  await Promise.all([p.waitForEvent("load"), p.click(selector)]);
}

async function signIn(p: Page, secret = SECRET) {
  await p.goto(url("/login"));
  await p.fill("#secret", secret);
  const [response] = await Promise.all([p.waitForResponse((r) => r.url().endsWith("/login") && r.request().method() === "POST"), p.click("button[type=submit]")]);
  await p.waitForLoadState();
  return response;
}

beforeAll(async () => {
  setup = await openBrowserSetup((db) => new Hono().route("/akadze", akadzeRoutes(app, { db, secret: SECRET, dashboard: akadzeDashboard({ now: clock.now }) })));
  ({ h, served, browser } = setup);
});

afterAll(async () => { await setup?.close(); });

beforeEach(async () => {
  await h.reset();
  vendorUp = false;
  await context?.close();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
});

describe("the dashboard in Chromium", () => {
  it("signs in, shows a failed job with its error, requeues it, and the job succeeds after a runOnce", async () => {
    const id = await report.using(h.db).enqueue({ month: "2026-05" });
    await run();
    const response = await signIn(page);
    expect(response.status()).toBe(303);
    expect(await page.locator("h1").textContent()).toBe("Overview");
    expect(await page.locator('#queues tr[data-queue="reports"]').textContent()).toContain("1");

    await clickAndLoad(page, "text=Failed");
    await clickAndLoad(page, `tr[data-job="${id}"] a`);
    expect(await page.locator("h1").textContent()).toContain("failed");
    expect(await page.locator("#errors").textContent()).toContain("vendor API down while building 2026-05");
    expect(await page.locator("#args").textContent()).toContain('"month": "2026-05"');

    await clickAndLoad(page, "button:has-text('Requeue')");
    expect(page.url()).toBe(url(`/jobs/${id}?done=requeued`));
    expect(await page.locator("h1 .badge").textContent()).toBe("queued");
    expect((await h.rows(`select state from akadze.all_jobs where id = ${id}`))[0].state).toBe("queued");

    vendorUp = true;
    expect((await run()).succeeded).toBe(1);
    await page.reload();
    expect(await page.locator("h1 .badge").textContent()).toBe("succeeded");
    expect(await page.locator("#result").textContent()).toContain('"rows": 1200');
    expect(await page.locator("#errors").textContent()).toContain("Errors (1)"); // the history is kept
  });

  it("pauses and resumes a queue from the overview", async () => {
    await mail.using(h.db).enqueue({ to: "ann@example.com" });
    await signIn(page);
    await clickAndLoad(page, '#queues tr[data-queue="mail"] button:has-text("Pause")');
    expect(await page.locator('#queues tr[data-queue="mail"] .badge.paused').count()).toBe(1);
    expect(await page.locator(".notice").textContent()).toContain("Queue paused");
    expect(await h.rows("select name, paused from akadze.queues")).toEqual([{ name: "mail", paused: true }]);
    expect((await run()).claimed).toBe(0);

    await clickAndLoad(page, '#queues tr[data-queue="mail"] button:has-text("Resume")');
    expect(await page.locator('#queues tr[data-queue="mail"] .badge.paused').count()).toBe(0);
    expect((await run()).succeeded).toBe(1);
  });

  it("makes a runtime schedule with the New schedule form, shows a refusal, edits it and deletes it", async () => {
    await signIn(page);
    await clickAndLoad(page, "#new-schedule");
    await page.fill('input[name="name"]', "t7.mail");
    await page.fill('input[name="tenant"]', "t7");
    await page.selectOption('select[name="task"]', "mail.send");
    await page.fill('input[name="cron"]', "0 9 * * *");
    await page.fill('input[name="timezone"]', "Europe/Berlin");
    await page.fill('textarea[name="args"]', '{"to": 7}'); // the task's schema wants a string
    await clickAndLoad(page, "button:has-text('Create schedule')");
    expect(await page.locator(".notice.problem").textContent()).toContain("args of schedule");
    expect(await page.inputValue('input[name="name"]')).toBe("t7.mail"); // what was typed stays
    await page.fill('textarea[name="args"]', '{"to": "ops@example.com"}');
    await clickAndLoad(page, "button:has-text('Create schedule')");
    expect(await page.locator(".notice").textContent()).toContain("Schedule created");
    expect(await page.locator('#schedules tr[data-schedule="t7.mail"]').textContent()).toContain('cron "0 9 * * *" Europe/Berlin');

    await clickAndLoad(page, '#schedules tr[data-schedule="t7.mail"] a:has-text("Edit")');
    expect(await page.inputValue('select[name="task"]')).toBe("mail.send");
    await page.fill('input[name="cron"]', "30 8 * * 1-5");
    await page.selectOption('select[name="overlap"]', "skip");
    await clickAndLoad(page, "button:has-text('Save changes')");
    expect(await page.locator(".notice").textContent()).toContain("Schedule saved");
    expect((await listSchedules(h.db, { tenant: "t7" }))[0]).toMatchObject({ schedule: 'cron "30 8 * * 1-5" Europe/Berlin', overlap: "skip" });

    await clickAndLoad(page, '#schedules tr[data-schedule="t7.mail"] a:has-text("Edit")');
    await clickAndLoad(page, "button:has-text('Delete schedule t7.mail')");
    expect(await page.locator(".notice").textContent()).toContain("Schedule deleted");
    expect(await listSchedules(h.db, { tenant: "t7" })).toEqual([]);
  });

  it("refuses a wrong secret, a browser without the cookie, and a POST without the CSRF token", async () => {
    const id = await report.using(h.db).enqueue({ month: "2026-05" });
    await run();

    const wrong = await signIn(page, "not-the-secret");
    expect(wrong.status()).toBe(401);
    expect(await page.locator(".notice").textContent()).toBe("Wrong secret.");
    expect(await context.cookies()).toEqual([]);

    for (const path of ["", `/jobs/${id}`, "/jobs?state=failed"]) {
      const res = await page.goto(url(path));
      expect(res!.status()).toBe(401);
      expect(await page.locator("#secret").count()).toBe(1);
      expect(await page.content()).not.toContain("vendor API down");
    }

    await signIn(page);
    expect((await context.cookies())[0]).toMatchObject({ name: "akadze_session", httpOnly: true, sameSite: "Strict", secure: true });
    // The same form with its token taken out, as a forged form would be.
    await page.goto(url(`/jobs/${id}`));
    await page.locator('form[action$="/requeue"] input[name="_csrf"]').evaluate((input) => input.remove());
    const [refused] = await Promise.all([page.waitForResponse((r) => r.url().endsWith("/requeue")), page.click("button:has-text('Requeue')")]);
    expect(refused.status()).toBe(403);
    expect(await page.locator(".notice").textContent()).toContain("CSRF token");
    // A form on another site: the SameSite=Strict cookie stays home, so the POST is not even signed in.
    const other = await context.newPage();
    await other.setContent(`<form method="post" action="${url("/queues/reports/pause")}"><button>go</button></form>`);
    const [crossSite] = await Promise.all([other.waitForResponse((r) => r.url().endsWith("/pause")), other.click("button")]);
    expect(crossSite.status()).toBe(401);
    expect((await h.rows(`select state from akadze.all_jobs where id = ${id}`))[0].state).toBe("failed");
    expect(await h.rows("select * from akadze.queues")).toEqual([]);
  });

  it("renders a job whose args hold <script> as text, and runs no script", async () => {
    const payload = `<script>alert("args")</script><img src=x onerror="alert('img')">`;
    const id = await mail.using(h.db).enqueue({ to: "eve@example.com", note: payload });
    const dialogs: string[] = [];
    page.on("dialog", (dialog) => { dialogs.push(dialog.message()); void dialog.dismiss(); });
    await signIn(page);
    await page.goto(url(`/jobs/${id}`));
    expect(await page.locator("#args").textContent()).toContain(JSON.stringify(payload).slice(1, -1));
    expect(await page.locator("#args script, #args img").count()).toBe(0);
    expect(await page.locator("script").count()).toBe(0);
    expect(dialogs).toEqual([]);
  });

  it("shows the overview with a busy hour (the docs' screenshot)", async () => {
    await setLimit(h.db, "vendor", { maxStarts: 10, window: "1m", maxRunning: 3 });
    app.periodic("reports.nightly", { cron: "0 3 * * *", timezone: "Europe/Berlin" }, async () => ({ rows: 0 }));
    clock.set("2026-06-01T11:02:00Z");
    for (let slice = 0; slice < 12; slice++) {
      await mail.using(h.db).enqueueMany(Array.from({ length: 3 + ((slice * 7) % 5) }, (_, i) => ({ to: `user${i}@example.com` })));
      if (slice % 4 === 1) await report.using(h.db).enqueue({ month: `2026-0${1 + (slice % 5)}` });
      await run();
      clock.advance(5 * 60_000);
    }
    await mail.using(h.db, { delay: "10m" }).enqueueMany([{ to: "later@example.com" }, { to: "later2@example.com" }]);
    await mail.using(h.db, { limitKey: "vendor" }).enqueueMany([{ to: "a@example.com" }, { to: "b@example.com" }]);
    clock.advance(90_000);
    await pauseQueue(h.db, "reports");
    await signIn(page);
    expect(await page.locator("#done-count").textContent()).not.toBe("0");
    expect(await page.locator("#failed-count").textContent()).toBe("3");
    if (process.env.AKADZE_DASHBOARD_SCREENSHOT) await page.screenshot({ path: process.env.AKADZE_DASHBOARD_SCREENSHOT, fullPage: true });
  });
});
