// What the browser tests share: a node-postgres database, the app's routes served on a local port over it,
// and a headless Chromium (test/support/chromium.ts) to open their pages.
import { chromium, type Browser } from "playwright-core";
import type { Db } from "akadze";
import { serveFetch, type Served } from "../../src/dev/serve.js";
import { openDriver, type Harness } from "./drivers.js";
import { CHROMIUM_ARGS, chromiumExecutable } from "./chromium.js";

export interface BrowserSetup {
  h: Harness;
  served: Served;
  browser: Browser;
  /** Closes the browser, the server and the database (whichever were opened). */
  close(): Promise<void>;
}

/**
 * Opens the database, serves `routes(db)` on a free port and launches Chromium.
 * @example setup = await openBrowserSetup((db) => new Hono().route("/akadze", akadzeRoutes(app, { db, secret })));
 */
export async function openBrowserSetup(routes: (db: Db) => { fetch(request: Request): Response | Promise<Response> }): Promise<BrowserSetup> {
  const executablePath = await chromiumExecutable();
  const h = await openDriver("node-postgres");
  let served: Served | undefined;
  let browser: Browser | undefined;
  const close = async () => {
    await browser?.close();
    await served?.close();
    await h.close();
  };
  try {
    const web = routes(h.db);
    served = await serveFetch((request) => web.fetch(request), 0);
    browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
    return { h, served, browser, close };
  } catch (error) {
    await close();
    throw error;
  }
}
