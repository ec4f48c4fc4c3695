import { configDefaults, defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));
/** The adoption matrix installs from the registry for minutes: `npm run test:adoption` runs it, alone. */
const ADOPTION = "test/package/adoption.test.ts";
const adoption = process.env.AKADZE_ADOPTION === "1";
/** The current miniflare (the workerd users deploy on) needs Node 22; on Node 20 the Workers tests keep the last one that runs there. */
const currentMiniflare = Number(process.versions.node.split(".")[0]) >= 22;

export default defineConfig({
  resolve: {
    alias: [
      { find: /^akadze$/, replacement: src("index.ts") },
      { find: /^akadze\/hono$/, replacement: src("edge/hono.ts") },
      { find: /^akadze\/dashboard$/, replacement: src("edge/dashboard/index.tsx") },
      { find: /^akadze\/otel$/, replacement: src("otel/index.ts") },
      { find: /^akadze\/schema$/, replacement: src("schema.ts") },
      { find: /^akadze\/testing$/, replacement: src("testing/index.ts") },
      ...(currentMiniflare ? [{ find: /^miniflare$/, replacement: "miniflare-latest" }] : []),
    ],
  },
  test: {
    globalSetup: ["./test/support/global-setup.ts"],
    setupFiles: ["./test/support/quiet-pools.ts", "./test/support/process-env-kept.ts"],
    include: adoption ? [ADOPTION] : ["test/**/*.test.ts", "examples/**/*.test.ts"],
    exclude: adoption ? configDefaults.exclude : [...configDefaults.exclude, ADOPTION],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 2,
    // Each of the two processes runs its files one after another on one module graph, instead of importing
    // akadze and its dependencies afresh for every file: the whole suite ran in 558-576 s against 682 s (1,896 tests,
    // 2 cores). A test that changes process-wide state puts it back (process.env: vi.stubEnv, test/support/process-env-kept.ts).
    isolate: false,
  },
});
