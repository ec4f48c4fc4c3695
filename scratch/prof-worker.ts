import { workerThroughput } from "../bench/akadze-worker.js";
const n = Number(process.argv[2] ?? 20000);
for (let i = 0; i < 3; i++) {
  const r = await workerThroughput("node-postgres", n, 10);
  console.log(JSON.stringify({ processPerSec: Math.round(r.processPerSec) }));
}
process.exit(0);
