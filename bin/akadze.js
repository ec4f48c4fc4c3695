#!/usr/bin/env node
// The `akadze` command. In a checkout (src/ present, tsx installed as a devDependency) it runs the
// TypeScript sources through tsx: never a stale build, and an app module that imports "akadze" (tsx
// maps it to src/ through tsconfig paths) shares the CLI's module instances, which `current()` and the
// Retry/Snooze/Fail/Cancel checks rely on. An installed package has no src/ and runs dist/, as does an
// app importing the package. When tsx is resolvable either way its loader stays registered, so
// `akadze worker ./app.ts` can load a TypeScript app.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const at = (path) => new URL(`../${path}`, import.meta.url);
let tsx = false;
try {
  const { register } = await import("tsx/esm/api");
  register();
  tsx = true;
} catch {
  // No tsx: run the build, and apps must be JavaScript.
}

const source = at("src/cli/main.ts");
const built = at("dist/src/cli/main.js");
const entry = tsx && existsSync(fileURLToPath(source)) ? source : existsSync(fileURLToPath(built)) ? built : null;
if (!entry) {
  process.stderr.write("akadze: no build found: run `npm install` (installs tsx) or `npm run build`\n");
  process.exit(1);
}
const { runCli } = await import(entry.href);
const code = await runCli(process.argv);
// A finished command exits even if an app's own pools or timers would keep the process alive;
// stdout and stderr are flushed first so piped output is complete.
await Promise.all([process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write("", resolve))));
process.exit(code);
