import { readFileSync, readdirSync } from "node:fs";
const dir = process.argv[2];
const file = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile")).map((f) => `${dir}/${f}`)[0];
const p = JSON.parse(readFileSync(file, "utf8"));
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = p.timeDeltas; let total = 0;
for (let i = 0; i < p.samples.length; i++) { const n = byId.get(p.samples[i]); const k = `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.replace(/.*\/(node_modules\/)?/, "")}:${n.callFrame.lineNumber}`; self.set(k, (self.get(k) ?? 0) + dt[i]); total += dt[i]; }
// inclusive by file
const byFile = new Map();
for (let i = 0; i < p.samples.length; i++) { const n = byId.get(p.samples[i]); const u = n.callFrame.url.replace(/.*node_modules\//, "nm/").replace(/.*\/work\/main\//, ""); byFile.set(u, (byFile.get(u) ?? 0) + dt[i]); }
console.log("total ms", (total / 1000).toFixed(0));
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 30)) console.log((v / 1000).toFixed(1).padStart(8), k);
console.log("--- self by file");
for (const [k, v] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log((v / 1000).toFixed(1).padStart(8), k);
