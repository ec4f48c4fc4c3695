// Postgres CPU spent for one database, read from /proc: the bench's server runs on this machine (pg_stat_statements
// would need shared_preload_libraries, i.e. a server restart, so it is not used). Also statement counters on a
// node-postgres pool and on neon-http requests, to tell claims from the other statements an invocation sends.
import { execSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { neonConfig } from "@neondatabase/serverless";
import pg from "pg";
import { ADMIN_URL } from "./databases.js";
import { timed } from "./stats.js";
import { CLAIM_MARK } from "../src/sql/claim/claim.js";

const TICKS_PER_SECOND = Number(execSync("getconf CLK_TCK").toString().trim()) || 100;

/** CPU ms (user + system) per backend pid of one database. */
export type CpuSnapshot = Map<number, number>;

function processCpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name is in parentheses and may hold spaces; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

/**
 * The CPU so far of every backend connected to `database`, or null when the server's processes are not
 * visible here (Postgres on another host or in another PID namespace).
 */
export async function snapshotCpu(database: string): Promise<CpuSnapshot | null> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>("select pid from pg_stat_activity where datname = $1", [database]);
    const snapshot: CpuSnapshot = new Map();
    for (const { pid } of rows) {
      const ms = processCpuMs(pid);
      if (ms !== null) snapshot.set(pid, ms);
    }
    return rows.length > 0 && snapshot.size === 0 ? null : snapshot;
  } finally {
    await client.end();
  }
}

/**
 * CPU ms the database's backends spent between two snapshots. Backends that started in between count from
 * zero; a backend that exited in between is lost, so keep the pool's connections open across the window.
 */
export function cpuSpentMs(before: CpuSnapshot | null, after: CpuSnapshot | null): number | null {
  if (before === null || after === null) return null;
  let ms = 0;
  for (const [pid, now] of after) ms += now - (before.get(pid) ?? 0);
  return ms;
}

export interface StatementCounter {
  statements: number;
  /** Claims: statements with the claim's lease of its batch (`CLAIM_MARK`); settles and prunes also lock with `skip locked`. */
  claims: number;
  /** The first claim sent since the last reset, text and parameters, to EXPLAIN it later. */
  firstClaim: { text: string; values: unknown[] } | null;
  /** The last claim sent since the last reset (a later claim of an invocation that drained). */
  lastClaim: { text: string; values: unknown[] } | null;
  reset(): void;
}

function newCounter(): StatementCounter {
  const counter: StatementCounter = {
    statements: 0, claims: 0, firstClaim: null, lastClaim: null,
    reset() { counter.statements = 0; counter.claims = 0; counter.firstClaim = null; counter.lastClaim = null; },
  };
  return counter;
}

function see(counter: StatementCounter, text: string, values: unknown[]): void {
  counter.statements++;
  if (text.includes(CLAIM_MARK)) {
    counter.claims++;
    counter.firstClaim ??= { text, values };
    counter.lastClaim = { text, values };
  }
}

/** Counts every statement sent through `pool`; install it before the pool opens its first connection. */
export function countStatements(pool: pg.Pool): StatementCounter {
  const counter = newCounter();
  pool.on("connect", (client) => {
    const send = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const first = args[0] as string | { text?: string; values?: unknown[] };
      const text = typeof first === "string" ? first : first?.text;
      if (typeof text === "string") {
        // node-postgres takes the values in the config object or as the second argument (drizzle uses the latter).
        see(counter, text, (typeof first === "object" && first.values) || (Array.isArray(args[1]) ? args[1] : []));
      }
      return send(...args);
    };
  });
  return counter;
}

const httpCounters = new Map<string, StatementCounter>();

/**
 * Counts the statements neon-http clients send to `fetchEndpoint` (one per query, every query of a batch), by
 * wrapping `neonConfig.fetchFunction`, which the driver only allows globally; other endpoints pass through.
 */
export function countHttpStatements(fetchEndpoint: string): StatementCounter {
  if (httpCounters.size === 0) {
    const send: typeof fetch = neonConfig.fetchFunction ?? fetch;
    neonConfig.fetchFunction = (url: string, init: RequestInit) => {
      const counter = httpCounters.get(String(url));
      if (counter && typeof init?.body === "string") {
        const body = JSON.parse(init.body) as { query?: string; params?: unknown[]; queries?: { query: string; params?: unknown[] }[] };
        for (const q of body.queries ?? [body]) if (typeof q.query === "string") see(counter, q.query, q.params ?? []);
      }
      return send(url, init);
    };
  }
  const counter = newCounter();
  httpCounters.set(fetchEndpoint, counter);
  return counter;
}

/**
 * What a burn-down cost the machine per job: this Node process's CPU (the engine or the peer's runner, its
 * driver, and for the neon drivers the local endpoint too) and the database's backends' (null where /proc
 * cannot see them), in µs.
 */
export interface CpuPerJob { nodeUs: number; postgresUs: number | null }

/**
 * `fn` timed, with the CPU it cost per job of `count`: the process's, and `database`'s backends' (snapshotted
 * outside the timed window; keep the connections open across it, see cpuSpentMs).
 */
export async function timedWithCpu(database: string | null, count: number, fn: () => Promise<void>): Promise<{ ms: number; cpu: CpuPerJob }> {
  const before = database === null ? null : await snapshotCpu(database);
  const node = process.cpuUsage();
  const { ms } = await timed(fn);
  const { user, system } = process.cpuUsage(node);
  const postgresMs = database === null ? null : cpuSpentMs(before, await snapshotCpu(database));
  return { ms, cpu: { nodeUs: (user + system) / count, postgresUs: postgresMs === null ? null : (postgresMs * 1000) / count } };
}
