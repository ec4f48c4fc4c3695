// Every ```ts block in docs/*.md and README.md compiles against the current API, and the blocks
// marked `run` run against real Postgres: a renamed option or a changed outcome breaks this test,
// not a reader. Conventions: docs/README.md, "Examples are tested".
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTestDatabase } from "../support/postgres.js";
import { readDocs, typeCheckExamples, writeExamples, type DocExample } from "../support/docs-blocks.js";
import { copyFileSync } from "node:fs";
import { openPrelude, PRELUDE_NAMES, resetPrelude, switchToNeonHttp } from "../support/docs-prelude.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const outDir = join(root, ".docs-check");
const prelude = join(root, "test/support/docs-prelude.ts");

// Two examples that must fail, so the check is seen to be able to fail.
const SENTINEL = {
  file: "test/docs-sentinel.md",
  markdown: [
    "```ts",
    'import { createApp } from "akadze";',
    "createApp({ clok: () => new Date() }); // a renamed option",
    "```",
    "",
    "```ts run",
    'import assert from "node:assert/strict";',
    'import { createApp, runOnce } from "akadze";',
    "const app = createApp();",
    'await app.task("noop", async () => {}).using(db).enqueue({});',
    "const summary = await runOnce(app, { db });",
    "assert.equal(summary.succeeded, 2); // a changed outcome",
    "```",
  ].join("\n"),
};

const examples = writeExamples(outDir, [...readDocs(root), SENTINEL], prelude, PRELUDE_NAMES);
const [renamedOption, changedOutcome] = examples.filter((e) => e.file === SENTINEL.file);
const docExamples = examples.filter((e) => e.file !== SENTINEL.file);

let problems: Map<DocExample, string[]>;
const typeCheck = () => (problems ??= typeCheckExamples(root, examples));

async function runExample(example: DocExample): Promise<void> {
  try {
    await import(/* @vite-ignore */ example.path);
  } catch (error) {
    throw new Error(`${example.file}:${example.line}: the example failed: ${(error as Error)?.message ?? error}`, { cause: error });
  }
}

describe("docs examples", () => {
  it("the docs have TypeScript examples, and some of them run", () => {
    expect(docExamples.length).toBeGreaterThan(0);
    expect(docExamples.filter((e) => e.run).length).toBeGreaterThan(0);
  });

  it("every TypeScript block in the docs and the README compiles", () => {
    const found = docExamples.flatMap((e) => typeCheck().get(e) ?? []);
    expect(found, found.join("\n")).toEqual([]);
  }, 120_000);

  it("a block that uses a renamed option does not compile", () => {
    expect(typeCheck().get(renamedOption)?.join("\n")).toMatch(/docs-sentinel\.md:3:\d+ TS\d+: .*clok/);
  }, 120_000);

  describe("against Postgres", () => {
    let close: (() => Promise<void>) | undefined;
    let drop: (() => Promise<void>) | undefined;
    let url = "";
    beforeAll(async () => {
      const database = await createTestDatabase("docs");
      url = database.url;
      drop = database.drop;
      close = await openPrelude(database.url);
    });
    afterAll(async () => {
      await close?.();
      await drop?.();
    });
    beforeEach(async () => { await resetPrelude(); });

    it("an example whose outcome changed fails", async () => {
      await expect(runExample(changedOutcome)).rejects.toThrow(/docs-sentinel\.md:\d+: the example failed/);
    });

    for (const example of docExamples.filter((e) => e.run)) {
      it(`${example.file}:${example.line} runs`, async () => { await runExample(example); });
    }

    // The README's first example promises every driver; neon-http (no interactive transactions) is the one that bites.
    it("README.md's first example also runs on neon-http", async () => {
      const first = docExamples.find((e) => e.file === "README.md" && e.run)!;
      const copy = { ...first, path: first.path.replace(/\.ts$/, "-neon-http.ts") };
      copyFileSync(first.path, copy.path); // a module runs once per path
      const restore = await switchToNeonHttp(url);
      try {
        await runExample(copy);
      } finally {
        await restore();
      }
    });
  });
});
