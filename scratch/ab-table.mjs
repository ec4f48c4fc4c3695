import { readFileSync, existsSync } from "node:fs";
const f = (n) => Math.round(n).toLocaleString("en");
console.log("| pair | burn-down before | burn-down after | worker before | worker after | graphile burn-down b/a | graphile worker b/a |");
console.log("|---|---|---|---|---|---|---|");
for (let i = 1; i <= 3; i++) {
  const p = (s) => existsSync(`/tmp/ab-${s}-${i}.json`) ? JSON.parse(readFileSync(`/tmp/ab-${s}-${i}.json`, "utf8")) : null;
  const b = p("before"), a = p("after");
  if (!b || !a) continue;
  const bd = (r) => `${f(r.throughput["akadze/node-postgres"].processPerSec)} (${r.ratios["akadze/node-postgres"]["graphile-worker"].processing.toFixed(2)}×)`;
  const wk = (r) => `${f(r.worker.akadze.processPerSec)} (${r.worker.ratio.toFixed(2)}×)`;
  console.log(`| ${i} | ${bd(b)} | ${bd(a)} | ${wk(b)} | ${wk(a)} | ${f(b.throughput["graphile-worker"].processPerSec)} / ${f(a.throughput["graphile-worker"].processPerSec)} | ${f(b.worker.graphile.processPerSec)} / ${f(a.worker.graphile.processPerSec)} |`);
}
