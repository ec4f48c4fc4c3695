import { configDefaults, defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));
/** The adoption matrix installs from the registry for minutes: `npm run test:adoption` runs it, alone. */
const ADOPTION = "test/adoption.test.ts";
const adoption = process.env.AKADZE_ADOPTION === "1";

export default defineConfig({
  resolve: {
    alias: [
      { find: /^akadze$/, replacement: src("index.ts") },
      { find: /^akadze\/hono$/, replacement: src("edge/hono.ts") },
      { find: /^akadze\/dashboard$/, replacement: src("edge/dashboard/index.tsx") },
      { find: /^akadze\/schema$/, replacement: src("schema.ts") },
    ],
  },
  test: {
    globalSetup: ["./test/support/global-setup.ts"],
    setupFiles: ["./test/support/quiet-pools.ts"],
    include: adoption ? [ADOPTION] : ["test/**/*.test.ts"],
    exclude: adoption ? configDefaults.exclude : [...configDefaults.exclude, ADOPTION],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 2,
  },
});
