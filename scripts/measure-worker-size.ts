// Measures the minified Worker bundle as `wrangler deploy --minify` builds it, and what of it is
// dependencies, akadze and the example app; then the same stack without akadze (examples/size-baseline.ts),
// and the Worker with the dashboard enabled (examples/worker-with-dashboard.ts).
// Run: npx tsx scripts/measure-worker-size.ts
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";

interface Meta { outputs: Record<string, { bytes: number; inputs: Record<string, { bytesInOutput: number }> }> }

function bundle(entry?: string): { bytes: number; gzip: number; parts: Map<string, number>; ownFiles: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "akadze-size-"));
  try {
    // Another entry needs its own config: wrangler takes `main` from wrangler.toml over a script argument.
    const config = entry ? join(dir, "wrangler.toml") : "wrangler.toml";
    if (entry) {
      writeFileSync(config, `name = "size"\nmain = ${JSON.stringify(resolve(entry))}\ncompatibility_date = "2026-04-01"\ncompatibility_flags = ["nodejs_compat"]\n`);
    }
    execFileSync("node_modules/.bin/wrangler", ["deploy", "--dry-run", "--minify", "--outdir", join(dir, "out"), "--metafile", join(dir, "out", "bundle-meta.json"), "--config", config],
      { env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" }, stdio: "pipe" });
    const name = entry ? entry.split("/").pop()!.replace(/\.ts$/, ".js") : "cloudflare.js";
    const code = readFileSync(join(dir, "out", name));
    const meta = JSON.parse(readFileSync(join(dir, "out", "bundle-meta.json"), "utf8")) as Meta;
    const output = Object.entries(meta.outputs).find(([path]) => path.endsWith(`/${name}`))![1];
    const parts = new Map<string, number>();
    const ownFiles: string[] = [];
    for (const [path, input] of Object.entries(output.inputs)) {
      const part = partOf(path);
      parts.set(part, (parts.get(part) ?? 0) + input.bytesInOutput);
      if (part.startsWith("akadze") && input.bytesInOutput > 0) ownFiles.push(path.replace(/^.*?src\//, "src/"));
    }
    return { bytes: code.length, gzip: gzipSync(code).length, parts, ownFiles };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function partOf(path: string): string {
  const i = path.lastIndexOf("node_modules/");
  if (i >= 0) {
    const rest = path.slice(i + "node_modules/".length).split("/");
    return rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  if (/(^|\/)src\/edge\/dashboard\//.test(path)) return "akadze dashboard (src/edge/dashboard/)";
  if (/(^|\/)src\//.test(path)) return "akadze (src/)";
  if (/(^|\/)functions\//.test(path)) return "example app (functions/)";
  return "other";
}

const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
const worker = bundle();
const baseline = bundle("examples/size-baseline.ts");
const withDashboard = bundle("examples/worker-with-dashboard.ts");
const deps = [...worker.parts].filter(([p]) => !p.startsWith("akadze") && !p.startsWith("example"));
console.log(`| | minified | gzip |\n|---|---:|---:|`);
console.log(`| functions/cloudflare.ts (akadze + example app + dependencies) | ${kb(worker.bytes)} | ${kb(worker.gzip)} |`);
console.log(`| examples/size-baseline.ts (Hono + valibot + drizzle neon-http, no akadze) | ${kb(baseline.bytes)} | ${kb(baseline.gzip)} |`);
console.log(`| examples/worker-with-dashboard.ts (the same Worker with \`akadzeDashboard()\`) | ${kb(withDashboard.bytes)} | ${kb(withDashboard.gzip)} |`);
console.log(`| what the dashboard adds | +${kb(withDashboard.bytes - worker.bytes)} | +${kb(withDashboard.gzip - worker.gzip)} |`);
console.log(`\nInside the Worker bundle (minified bytes by origin):\n\n| part | minified |\n|---|---:|`);
for (const [part, bytes] of [...worker.parts].sort((a, b) => b[1] - a[1])) console.log(`| ${part} | ${kb(bytes)} |`);
console.log(`| dependencies together | ${kb(deps.reduce((n, [, b]) => n + b, 0))} |`);
console.log(`\nWhat the dashboard adds (minified bytes by origin):\n\n| part | minified |\n|---|---:|`);
for (const [part, bytes] of withDashboard.parts) {
  const added = bytes - (worker.parts.get(part) ?? 0);
  if (added > 0) console.log(`| ${part} | +${kb(added)} |`);
}
const own = worker.parts.get("akadze (src/)") ?? 0;
// esbuild reports minified bytes per input, not gzip: apply the bundle's own compression ratio to akadze's share.
console.log(`\nakadze's own share of the Worker bundle: ${kb(own)} minified, about ${kb(own * worker.gzip / worker.bytes)} gzip (${worker.ownFiles.length} modules: ${worker.ownFiles.sort().join(", ")})`);
