#!/usr/bin/env node
// The `akadze` command. `current()` and the Retry/Snooze/Fail/Cancel checks need the CLI and the app to
// share one copy of akadze's modules, so the CLI runs the same files the app imports:
// - run from inside a checkout (the cwd is under this package, src/ and tsx present): the TypeScript
//   sources through tsx, which is what the checkout's own apps (functions/, test fixtures) import;
// - anywhere else (a tarball install, `npm install ../akadze`, `npm link`): the built dist/, which is
//   what `import "akadze"` resolves to through package.json "exports" (symlinks resolve to the same files).
// tsx is registered here only for the checkout; an installed CLI registers it when it loads a .ts app
// (src/cli/load-module.ts), so commands that load no app start fast.
import { existsSync } from "node:fs";
import { relative, isAbsolute } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const at = (path) => new URL(`../${path}`, import.meta.url);
const source = at("src/cli/main.ts");
const built = at("dist/src/cli/main.js");
const fromRoot = relative(root, process.cwd());
const insideCheckout = existsSync(fileURLToPath(source)) && !fromRoot.startsWith("..") && !isAbsolute(fromRoot);

let entry = null;
if (insideCheckout || !existsSync(fileURLToPath(built))) {
  try {
    const { register } = await import("tsx/esm/api");
    register();
    globalThis[Symbol.for("akadze.tsx")] = true;
    if (existsSync(fileURLToPath(source))) entry = source;
  } catch {
    // No tsx: fall back to the build below.
  }
}
if (!entry && existsSync(fileURLToPath(built))) entry = built;
if (!entry) {
  process.stderr.write("akadze: no build found: run `npm run build` in the akadze checkout (or `npm install` there, for tsx)\n");
  process.exit(1);
}
const { runCli } = await import(entry.href);
const code = await runCli(process.argv);
// A finished command exits even if an app's own pools or timers would keep the process alive;
// stdout and stderr are flushed first so piped output is complete.
await Promise.all([process.stdout, process.stderr].map((stream) => new Promise((resolve) => stream.write("", resolve))));
process.exit(code);
