// Child-process fixtures bundled into plain JavaScript, once per test file. A child started with
// `node --import tsx fixture.ts` compiles akadze's sources before it does anything: about 1 s of CPU
// (measured), tens of seconds of real time on 2 cores beside another suite, paid again by every child. A
// bundle loads in about 0.2 s of CPU and runs the same code (akadze's sources and the fixtures inlined;
// packages are imported from node_modules as the sources import them).
import { rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

/** Bundled fixtures: the file to start for each entry, and removal of the lot. */
export interface BundledFixtures {
  /** The bundled file of entry `name` (a path: spawn `node <path>`, or `--import` its file URL). */
  path(name: string): string;
  remove(): void;
}

/**
 * Bundles `entries` (name -> a .ts file) into a directory inside the checkout (under node_modules/.cache, so
 * the bundles' own imports resolve to the checkout's packages). Call it in beforeAll and `remove` in afterAll.
 * @example const fixtures = await bundleFixtures({ worker: fileURLToPath(new URL("./fixtures/kill-worker.ts", import.meta.url)) });
 */
export async function bundleFixtures(entries: Record<string, string>): Promise<BundledFixtures> {
  const dir = fileURLToPath(new URL(`../../node_modules/.cache/akadze-fixtures-${process.pid}-${Object.keys(entries).join("-")}/`, import.meta.url));
  await build({
    entryPoints: entries, outdir: dir, outExtension: { ".js": ".mjs" }, bundle: true, platform: "node", format: "esm",
    target: "node20", packages: "external", logLevel: "error",
  });
  return { path: (name) => join(dir, `${name}.mjs`), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
