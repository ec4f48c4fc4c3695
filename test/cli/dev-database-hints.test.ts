// What the CLI says when it is pointed at akadze dev's database the wrong way: the URL of .dev.vars (akadze
// dev's Neon endpoint, which speaks HTTP and WebSocket, not Postgres's own protocol) without --http, or
// the PGlite directory that another process (akadze dev) has open.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it, vi } from "vitest";
import { lockPgliteDirectory, PGLITE_LOCK_FILE, SHARE_DEV_DATABASE } from "../../src/dev/pglite-lock.js";
import { MIGRATE_HINT } from "../../src/db/query.js";
import { startNeonEndpoint, type NeonEndpoint } from "../../src/dev/neon-endpoint.js";
import { openTestDatabase, type TestDatabase } from "../support/database.js";
import { CLI_TEST_TIMEOUT_MS, runAkadze } from "../support/cli.js";

// Each test spawns the CLI (tsx start-up each time): its timeout allows for that on a loaded machine.
vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

let t: TestDatabase;
let endpoint: NeonEndpoint;
beforeAll(async () => {
  t = await openTestDatabase("cli_dev_hints");
  endpoint = await startNeonEndpoint({ connectionString: t.url });
});
afterAll(async () => {
  await endpoint?.close();
  await t?.close();
});

it("the .dev.vars URL without --http gets one line that says to add --http; with it the command works", async () => {
  const url = t.url.replace(/:\d+\//, `:${endpoint.port}/`); // the shape of .dev.vars: the endpoint's port
  const [plain, http] = await Promise.all([
    runAkadze(["queues", "list"], { DATABASE_URL: url, NEON_FETCH_ENDPOINT: undefined }),
    runAkadze(["queues", "list", "--http"], { DATABASE_URL: url, NEON_FETCH_ENDPOINT: endpoint.fetchEndpoint }),
  ]);
  expect(plain).toEqual({ code: 1, stdout: "", stderr: `akadze: ${url} closed the connection at once: if it is \`akadze dev\`'s Neon endpoint ` +
    "(the DATABASE_URL in .dev.vars), it speaks Neon's HTTP protocol: add --http (NEON_FETCH_ENDPOINT from .dev.vars says where, or pass --neon-endpoint)\n" });
  expect(http).toMatchObject({ code: 0, stderr: "" });
});

it("a PGlite directory another process has open is refused, naming the process; a lock whose process is gone is taken over", async () => {
  const dir = mkdtempSync(join(tmpdir(), "akadze-pglite-lock-"));
  try {
    const release = lockPgliteDirectory(dir, SHARE_DEV_DATABASE);
    const refused = await runAkadze(["queues", "list", "--database", dir], { DATABASE_URL: undefined });
    expect(refused).toEqual({ code: 1, stdout: "", stderr: `akadze: the PGlite database in ${dir} is open in another process (pid ${process.pid}), ` +
      `and PGlite allows one process at a time: ${SHARE_DEV_DATABASE}\n` });
    release();
    expect(existsSync(join(dir, PGLITE_LOCK_FILE))).toBe(false);

    const gone = spawnSync(process.execPath, ["-e", ""]).pid!; // a process that has exited
    writeFileSync(join(dir, PGLITE_LOCK_FILE), String(gone));
    const opened = await runAkadze(["queues", "list", "--database", dir], { DATABASE_URL: undefined });
    expect(opened.stderr).toBe(`akadze: ${MIGRATE_HINT}\n`); // past the lock: a fresh PGlite, never migrated
    expect(existsSync(join(dir, PGLITE_LOCK_FILE))).toBe(false); // released when the CLI closed it
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
