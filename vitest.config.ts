import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^akadze$/, replacement: src("index.ts") },
      { find: /^akadze\/hono$/, replacement: src("edge/hono.ts") },
      { find: /^akadze\/dashboard$/, replacement: src("edge/dashboard/index.tsx") },
      { find: /^akadze\/schema$/, replacement: src("schema.ts") },
      { find: /^akadze\/testing$/, replacement: src("testing/index.ts") },
    ],
  },
  test: {
    globalSetup: ["./test/support/global-setup.ts"],
    setupFiles: ["./test/support/quiet-pools.ts"],
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 2,
  },
});
