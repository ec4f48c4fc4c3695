// A page in headless Chromium (playwright-core, as the dashboard's browser test) follows a job through the event
// stream of akadze/hono with an EventSource and a per-job token: it receives each progress value the job reports
// while runOnce ticks (on a test clock) run it, then its result.
import { afterAll, beforeAll, expect, it } from "vitest";
import { Hono } from "hono";
import type { Browser } from "playwright-core";
import { createApp, runOnce, Snooze } from "akadze";
import { akadzeRoutes, jobEventsToken } from "akadze/hono";
import type { Served } from "../../src/dev/serve.js";
import type { Harness } from "../support/drivers.js";
import { ManualClock } from "../support/clock.js";
import { openBrowserSetup, type BrowserSetup } from "../support/browser.js";

const SECRET = "progress-browser-secret";
const clock = new ManualClock("2026-06-01T12:00:00Z");
const app = createApp({ clock: clock.now });
// One chunk a tick: the job reports how far it got and snoozes until the next tick, three times.
let chunks = 0;
const importRows = app.task("rows.import", async (_args, job) => {
  chunks++;
  job.progress({ chunk: chunks, of: 3 });
  if (chunks < 3) throw new Snooze("1m");
  return { imported: 3 * 500 };
});

/** The app's own page: it opens the job's event stream with the token the server minted for it. */
function watchPage(id: number, token: string): string {
  return `<!doctype html><meta charset="utf-8"><title>Import ${id}</title>
<ol id="progress"></ol><p id="result"></p>
<script>
  const events = new EventSource("/akadze/jobs/${id}/events?token=${token}");
  events.addEventListener("progress", (e) => {
    const li = document.createElement("li");
    const { progress } = JSON.parse(e.data);
    li.textContent = "chunk " + progress.chunk + " of " + progress.of;
    document.getElementById("progress").append(li);
  });
  events.addEventListener("end", (e) => {
    const end = JSON.parse(e.data);
    document.getElementById("result").textContent = end.state + " " + JSON.stringify(end.result);
    events.close();
  });
</script>`;
}

let setup: BrowserSetup | undefined;
let h: Harness;
let served: Served;
let browser: Browser;

beforeAll(async () => {
  setup = await openBrowserSetup((db) => new Hono()
    .route("/akadze", akadzeRoutes(app, { db, secret: SECRET, log: "silent", events: { pollEvery: "50ms", maxPollEvery: "100ms" } }))
    .get("/imports/:id", async (c) => {
      const id = Number(c.req.param("id"));
      return c.html(watchPage(id, await jobEventsToken(SECRET, id, new Date(Date.now() + 10 * 60_000))));
    }));
  ({ h, served, browser } = setup);
});

afterAll(async () => { await setup?.close(); });

it("a page's EventSource receives each progress value of a job run by runOnce ticks, then its result", async () => {
  const id = await importRows.using(h.db).enqueue({});
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${served.url}/imports/${id}`);
    const shown = page.locator("#progress li");
    for (const chunk of [1, 2, 3]) {
      await runOnce(app, { db: h.db, now: clock.now });
      clock.advance(60_000);
      if (chunk < 3) await expect.poll(() => shown.count(), { timeout: 20_000 }).toBe(chunk);
    }
    await expect.poll(() => page.locator("#result").textContent(), { timeout: 20_000 }).toBe('succeeded {"imported":1500}');
    expect(await shown.allTextContents()).toEqual(["chunk 1 of 3", "chunk 2 of 3", "chunk 3 of 3"]);
  } finally {
    await context.close();
  }
});
