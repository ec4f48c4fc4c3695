// What the CLI says when it is pointed at akadze dev's database the wrong way: the URL of .dev.vars (akadze
// dev's Neon endpoint, which speaks HTTP and WebSocket, not Postgres's own protocol) without --http.
import { afterAll, beforeAll, expect, it } from "vitest";
import { startNeonEndpoint, type NeonEndpoint } from "../src/dev/neon-endpoint.js";
import { openTestDatabase, type TestDatabase } from "./support/database.js";
import { runAkadze } from "./support/cli.js";

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
