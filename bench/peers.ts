// Which release of each peer this process runs: the latest, graphile-worker 0.18 and pg-boss 12, on every Node.
// Their engines ask for Node 22 (">=22.18.0", ">=22.12.0"), but both ran on Node 20.20 here (sweep, burn-down,
// latency: no error), so Node 20 and Node 24 compare the same releases. `BENCH_PEERS=node20` runs the latest
// releases whose engines admit Node 20 instead (graphile-worker 0.17.3, pg-boss 10.4.2, kept as devDependencies;
// the latest are installed under npm aliases).
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type * as GraphileWorker from "graphile-worker-latest";
import type * as PgBossLatest from "pg-boss-latest";

const require = createRequire(import.meta.url);

const forced = process.env.BENCH_PEERS;
if (forced !== undefined && forced !== "latest" && forced !== "node20") throw new Error(`BENCH_PEERS must be "latest" or "node20", got ${JSON.stringify(forced)}`);
const graphileLatest = forced !== "node20";
const pgbossLatest = forced !== "node20";

const GRAPHILE_PACKAGE = graphileLatest ? "graphile-worker-latest" : "graphile-worker";
const PGBOSS_PACKAGE = pgbossLatest ? "pg-boss-latest" : "pg-boss";

/** A package's version, read from the package.json above its entry point (0.18's exports do not list its package.json). */
function versionOf(pkg: string): string {
  for (let dir = dirname(require.resolve(pkg)); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (existsSync(file) && dir.endsWith(pkg)) return JSON.parse(readFileSync(file, "utf8")).version;
  }
  throw new Error(`bench: no package.json found for ${pkg}`);
}

export const GRAPHILE_VERSION = versionOf(GRAPHILE_PACKAGE);
export const PGBOSS_VERSION = versionOf(PGBOSS_PACKAGE);

/** graphile-worker's module, typed as the latest (0.17's API for what the bench uses is the same). */
export const graphileWorker = (await import(GRAPHILE_PACKAGE)) as typeof GraphileWorker;

type PgBoss = PgBossLatest.PgBoss;
type BossOptions = ConstructorParameters<typeof PgBossLatest.PgBoss>[0] & object;

/** pg-boss 12 names its class export; 10 exports it as the default. */
const pgbossModule = (await import(PGBOSS_PACKAGE)) as { PgBoss?: new (o: BossOptions) => PgBoss; default?: new (o: BossOptions) => PgBoss };
const PgBossClass = pgbossModule.PgBoss ?? pgbossModule.default!;

/** Whether the pg-boss in use is 11 or later: `insert(name, jobs)`, queue `notify`, work()'s `burstWhenBatchFull`. */
export const PGBOSS_MODERN = Number(PGBOSS_VERSION.split(".")[0]) >= 11;

export function newPgBoss(options: BossOptions): PgBoss {
  return new PgBossClass(options);
}

/** Inserts jobs of `queue` in one statement, in either release's signature. */
export async function insertJobs(boss: PgBoss, queue: string, jobs: { data: object }[]): Promise<void> {
  if (PGBOSS_MODERN) await boss.insert(queue, jobs);
  else await (boss as unknown as { insert(jobs: { name: string; data: object }[]): Promise<unknown> }).insert(jobs.map((j) => ({ name: queue, ...j })));
}

export type { PgBoss };
